import PostalMime from "postal-mime";
import { describe, expect, it } from "vitest";
import { openMemoryStore } from "@mailroom/store/open.js";
import { silentLogger } from "@mailroom/kit/testing.js";
import { StoreDmarcReports } from "../../adapters/dmarc-store.js";
import { dmarcFixture, gzip, gzipBodyMessage, reportMessage, zip } from "../../dmarc-testing.js";
import { summarise } from "./summary.js";
import { DmarcReportMailbox } from "./mailbox.js";
import type { Logger } from "../ports.js";

const RUA = "dmarc@mx.mailroom.example";
const SINCE = new Date("2026-11-01T00:00:00Z");

async function mailbox() {
  const reports = await StoreDmarcReports.open(openMemoryStore());
  const logged: { level: string; obj: object; msg?: string }[] = [];
  const logger: Logger = { ...silentLogger } as Logger;
  for (const level of ["debug", "info", "warn", "error"] as const) logger[level] = (obj: object, msg?: string) => logged.push({ level, obj, msg });
  const box = new DmarcReportMailbox({ store: reports, hosts: ["MX.mailroom.example."], clock: { now: () => new Date("2026-11-29T12:00:00Z") }, logger });
  return { box, reports, logged, acme: async () => summarise(await reports.reportsFor("acme.example", SINCE)) };
}

describe("DmarcReportMailbox", () => {
  it("is dmarc@ the inbound host, in any case, and no other address", async () => {
    const { box } = await mailbox();
    expect(box.isReportMailbox("dmarc@mx.mailroom.example")).toBe(true);
    expect(box.isReportMailbox("DMARC@MX.Mailroom.Example")).toBe(true);
    expect(box.isReportMailbox("dmarc@acme.example")).toBe(false);
    expect(box.isReportMailbox("support@mx.mailroom.example")).toBe(false);
    expect(new DmarcReportMailbox({ store: {} as never, hosts: [""], clock: { now: () => new Date() }, logger: silentLogger }).isReportMailbox("dmarc@")).toBe(false);
  });

  it("keeps the reports of a gzip attachment, a zip attachment and a gzip body; a redelivered message adds nothing", async () => {
    const { box, acme } = await mailbox();
    const gz = await reportMessage({ to: RUA, attachments: [{ filename: "google.com!acme.example!1795132800!1795219199.xml.gz", contentType: "application/gzip", content: gzip(dmarcFixture("google-multi-record.xml")) }] });
    const zipped = await reportMessage({
      to: RUA, from: "dmarcreport@microsoft.com", subject: "Report Domain: acme.example Submitter: enterprise.protection.outlook.com",
      attachments: [{ filename: "enterprise.protection.outlook.com!acme.example!1795219200!1795305599.zip", contentType: "application/zip", content: await zip({ "report.xml": dmarcFixture("outlook-zip.xml") }) }],
    });
    const body = gzipBodyMessage(RUA, gzip(dmarcFixture("yahoo-single-record.xml")));
    for (const raw of [gz, zipped, body, gz]) await box.receive(raw);
    const summary = await acme();
    expect(summary.reports).toBe(3);
    expect(summary.days.map((d) => [d.day, d.messages])).toEqual([["2026-11-20", 155], ["2026-11-21", 48], ["2026-11-22", 1]]);
    expect(summary.sources.filter((s) => s.failingAlignment).map((s) => s.sourceIp)).toEqual(["2001:db8::25", "198.51.100.7"]);
  });

  it("uses the caller's parse when its attachments are bytes, and reads the raw message again when they were decoded as text", async () => {
    const { box, acme } = await mailbox();
    const raw = await reportMessage({ to: RUA, attachments: [{ filename: "r.xml.gz", contentType: "application/gzip", content: gzip(dmarcFixture("google-multi-record.xml")) }] });
    await box.receive(raw, await PostalMime.parse(raw, { attachmentEncoding: "utf8" }));
    expect((await acme()).reports).toBe(1);
    const { box: box2, acme: acme2 } = await mailbox();
    await box2.receive(raw, await PostalMime.parse(raw));
    expect((await acme2()).days.map((d) => d.messages)).toEqual([155]);
  });

  it("drops, with a log line, a message without a report and one whose file is refused; never throws for them", async () => {
    const { box, logged, acme } = await mailbox();
    await box.receive(await reportMessage({ to: RUA, subject: "hello", attachments: [] }));
    await box.receive(await reportMessage({ to: RUA, attachments: [{ filename: "r.xml", contentType: "text/xml", content: new TextEncoder().encode("<feedback><nope/></feedback>") }] }));
    expect((await acme()).reports).toBe(0);
    expect(logged.filter((l) => l.level === "info").map((l) => l.msg)).toEqual([
      "DMARC mailbox: message without an aggregate report dropped",
      "DMARC mailbox: message without an aggregate report dropped",
    ]);
    expect(logged.find((l) => l.level === "warn")?.obj).toEqual({ refused: ["r.xml: report_metadata without org_name or report_id"] });
  });

  it("fails the message when the store fails, so the reporter retries (SMTP 451)", async () => {
    const box = new DmarcReportMailbox({
      store: { save: async () => { throw new Error("store down"); }, reportsFor: async () => [] },
      hosts: ["mx.mailroom.example"], clock: { now: () => new Date() }, logger: silentLogger,
    });
    const raw = await reportMessage({ to: RUA, attachments: [{ filename: "r.xml", contentType: "text/xml", content: dmarcFixture("yahoo-single-record.xml") }] });
    await expect(box.receive(raw)).rejects.toThrow("store down");
  });
});
