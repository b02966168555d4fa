/**
 * DESIGN §10.4's DMARC reports, end to end: aggregate reports (written from RFC 7489 Appendix
 * C's format) mailed over real SMTP to the inbound unit's rua address — one gzipped as an
 * attachment, one zipped, one whose whole body is the gzip, one delivered twice — are read,
 * kept once each, and summed by GET /v1/domains/:id/dmarc for the workspace whose sending
 * domain they are about; another workspace gets a 404 for that domain, and nothing of it for
 * its own.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import nodemailer from "nodemailer";
import { dmarcFixture, gzip, gzipBodyMessage, reportMessage, zip } from "../../services/inbound/src/dmarc-testing.js";
import type { TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

const KEYS = { acme: "mr_test_dmarc_e2e_acme", other: "mr_test_dmarc_e2e_other" };
/** The inbound unit's host when MAILROOM_INBOUND_MX_HOST is unset (the accounts unit's default too). */
const RUA = "dmarc@inbound.mailroom.local";
const SINCE = "2026-11-01T00:00:00Z";

describe("DMARC aggregate reports mailed to the inbound unit", () => {
  let sys: TestSystem;

  /** One SMTP transaction to the inbound unit, as a reporter's MTA makes it. */
  async function deliver(raw: Buffer, from = "noreply-dmarc-support@google.com") {
    const transport = nodemailer.createTransport({ host: "127.0.0.1", port: sys.ports.inbound, secure: false, ignoreTLS: true });
    try {
      return await transport.sendMail({ envelope: { from, to: RUA }, raw });
    } finally {
      transport.close();
    }
  }

  beforeAll(async () => {
    sys = await useSystem({
      bootstrap: {
        workspaces: [
          { id: "ws_dmarc_e2e_acme", name: "Acme", apiKeys: [{ key: KEYS.acme, scopes: ["api_user"] }], verifiedDomains: ["acme.example"] },
          { id: "ws_dmarc_e2e_other", name: "Other", apiKeys: [{ key: KEYS.other, scopes: ["api_user"] }], verifiedDomains: ["other.example"] },
        ],
      },
    });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("suggests the rua in the domain's DMARC record", async () => {
    const res = await sys.api("GET", `/v1/domains/acme.example/dmarc?since=${SINCE}`, { key: KEYS.acme });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ domain: "acme.example", reports: 0, sources: [], days: [], rua: `mailto:${RUA}` });
  });

  it("sums a gzip, a zip and a gzip-body report, a redelivery counted once", async () => {
    const google = await reportMessage({
      to: RUA,
      attachments: [{ filename: "google.com!acme.example!1795132800!1795219199.xml.gz", contentType: "application/gzip", content: gzip(dmarcFixture("google-multi-record.xml")) }],
    });
    const outlook = await reportMessage({
      to: RUA, from: "dmarcreport@microsoft.com", subject: "Report Domain: acme.example Submitter: enterprise.protection.outlook.com Report-ID: <0a1b2c3d4e5f40718293a4b5c6d7e8f9>",
      attachments: [{ filename: "enterprise.protection.outlook.com!acme.example!1795219200!1795305599.zip", contentType: "application/zip", content: await zip({ "enterprise.protection.outlook.com!acme.example!1795219200!1795305599.xml": dmarcFixture("outlook-zip.xml") }) }],
    });
    const yahoo = gzipBodyMessage(RUA, gzip(dmarcFixture("yahoo-single-record.xml")), "yahoo.com!acme.example!1795305600!1795391999.xml.gz");
    for (const raw of [google, outlook, yahoo, google]) expect((await deliver(raw)).accepted).toEqual([RUA]);

    const res = await sys.api("GET", `/v1/domains/acme.example/dmarc?since=${SINCE}`, { key: KEYS.acme });
    expect(res.status, await sys.log("inbound")).toBe(200);
    const none = (n: number) => ({ none: n, quarantine: 0, reject: 0 });
    expect(res.body).toEqual({
      domain: "acme.example",
      since: "2026-11-01T00:00:00.000Z",
      reports: 3,
      reporters: ["Enterprise Outlook", "Yahoo", "google.com"],
      rua: `mailto:${RUA}`,
      sources: [
        { sourceIp: "192.0.2.10", messages: 161, spfAlignedPassRate: 1, dkimAlignedPassRate: 1, dmarcPassRate: 1, disposition: none(161), failingAlignment: false },
        { sourceIp: "192.0.2.11", messages: 30, spfAlignedPassRate: 0, dkimAlignedPassRate: 1, dmarcPassRate: 1, disposition: none(30), failingAlignment: false },
        { sourceIp: "2001:db8::25", messages: 8, spfAlignedPassRate: 0, dkimAlignedPassRate: 0, dmarcPassRate: 0, disposition: { none: 0, quarantine: 0, reject: 8 }, failingAlignment: true },
        { sourceIp: "198.51.100.7", messages: 5, spfAlignedPassRate: 0, dkimAlignedPassRate: 0, dmarcPassRate: 0, disposition: { none: 0, quarantine: 5, reject: 0 }, failingAlignment: true },
      ],
      days: [
        { day: "2026-11-20", messages: 155, spfAlignedPassRate: 120 / 155, dkimAlignedPassRate: 150 / 155, dmarcPassRate: 150 / 155, disposition: { none: 150, quarantine: 5, reject: 0 } },
        { day: "2026-11-21", messages: 48, spfAlignedPassRate: 40 / 48, dkimAlignedPassRate: 40 / 48, dmarcPassRate: 40 / 48, disposition: { none: 40, quarantine: 0, reject: 8 } },
        { day: "2026-11-22", messages: 1, spfAlignedPassRate: 1, dkimAlignedPassRate: 1, dmarcPassRate: 1, disposition: none(1) },
      ],
    });

    // `since` after the first two reports' periods: the third alone.
    const late = await sys.api("GET", "/v1/domains/acme.example/dmarc?since=2026-11-22T00:00:00Z", { key: KEYS.acme });
    expect([late.body.reports, late.body.days.map((d: { day: string }) => d.day)]).toEqual([1, ["2026-11-22"]]);
  });

  it("takes a message without a report (250, nothing kept) rather than have it sent again", async () => {
    expect((await deliver(await reportMessage({ to: RUA, subject: "hello" }), "someone@example.org")).accepted).toEqual([RUA]);
    expect((await sys.api("GET", `/v1/domains/acme.example/dmarc?since=${SINCE}`, { key: KEYS.acme })).body.reports).toBe(3);
  });

  it("shows another workspace nothing: a 404 for acme.example, no report for its own domain", async () => {
    const theirs = await sys.api("GET", `/v1/domains/acme.example/dmarc?since=${SINCE}`, { key: KEYS.other });
    expect([theirs.status, theirs.body.code]).toEqual([404, "domain_not_found"]);
    const own = await sys.api("GET", `/v1/domains/other.example/dmarc?since=${SINCE}`, { key: KEYS.other });
    expect([own.status, own.body.reports, own.body.sources]).toEqual([200, 0, []]);
    const bad = await sys.api("GET", "/v1/domains/acme.example/dmarc?since=last-week", { key: KEYS.acme });
    expect([bad.status, bad.body.code]).toEqual([400, "invalid_request"]);
  });
});
