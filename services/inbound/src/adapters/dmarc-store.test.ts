import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { openMemoryStore, openStore } from "@mailroom/store/open.js";
import type { Store } from "@mailroom/store/port.js";
import { dmarcFixture } from "../dmarc-testing.js";
import { parseAggregateXml } from "../domain/dmarc/parse.js";
import type { AggregateReport } from "../domain/dmarc/model.js";
import { dmarcSummaryHandler } from "../dmarc-routes.js";
import { StoreDmarcReports } from "./dmarc-store.js";

const report = (name: string): AggregateReport => parseAggregateXml(dmarcFixture(name).toString("utf8")).report;
const GOOGLE = report("google-multi-record.xml"); // 2026-11-20: 155 messages
const OUTLOOK = report("outlook-zip.xml"); // 2026-11-21: 48 for acme.example, 3 for news.acme.example
const YAHOO = report("yahoo-single-record.xml"); // 2026-11-22: 1
const NOW = new Date("2026-11-29T12:00:00Z");

/** The store and GetDmarcSummary over it, on the in-memory store and on the embedded (LMDB) one the unit runs on. */
describe.each(["memory", "lmdb"] as const)("DMARC reports kept and summarised (%s store)", (kind) => {
  let store: Store;
  let dir = "";
  let reports: StoreDmarcReports;
  let summary: ReturnType<typeof dmarcSummaryHandler>["getDmarcSummary"];
  const ask = (domain: string, since?: string) =>
    summary({ workspaceId: "ws_acme", domain, since: since ? timestampFromDate(new Date(since)) : undefined } as Parameters<typeof summary>[0]);

  beforeAll(async () => {
    if (kind === "lmdb") {
      dir = await mkdtemp(path.join(os.tmpdir(), "dmarc-store-"));
      store = await openStore({ dataDir: dir, service: "inbound" });
    } else store = openMemoryStore();
    reports = await StoreDmarcReports.open(store);
    summary = dmarcSummaryHandler({ reports, inboundHost: "mx.mailroom.example", clock: { now: () => NOW } }).getDmarcSummary;
    for (const r of [GOOGLE, OUTLOOK, YAHOO]) expect(await reports.save(r, NOW)).toBe(true);
  });
  afterAll(async () => {
    await store?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("counts a redelivered report once (same reporter and report id), even under another case of the reporter's name", async () => {
    expect(await reports.save(GOOGLE, new Date())).toBe(false);
    expect(await reports.save({ ...GOOGLE, orgName: "Google.com" }, new Date())).toBe(false);
    const res = await ask("acme.example");
    expect(res.reports).toBe(3);
    expect(res.days?.find((d) => d.day === "2026-11-20")?.messages).toBe(155n);
  });

  it("sums per source IP and per day: messages, aligned pass rates, dispositions, failing sources", async () => {
    const res = await ask("acme.example");
    expect(res.rua).toBe("mailto:dmarc@mx.mailroom.example");
    expect(res.reporters).toEqual(["Enterprise Outlook", "Yahoo", "google.com"]);
    expect(res.sources).toEqual([
      { sourceIp: "192.0.2.10", messages: 161n, spfAlignedPassRate: 1, dkimAlignedPassRate: 1, dmarcPassRate: 1, dispositionNone: 161n, dispositionQuarantine: 0n, dispositionReject: 0n, failingAlignment: false },
      { sourceIp: "192.0.2.11", messages: 30n, spfAlignedPassRate: 0, dkimAlignedPassRate: 1, dmarcPassRate: 1, dispositionNone: 30n, dispositionQuarantine: 0n, dispositionReject: 0n, failingAlignment: false },
      { sourceIp: "2001:db8::25", messages: 8n, spfAlignedPassRate: 0, dkimAlignedPassRate: 0, dmarcPassRate: 0, dispositionNone: 0n, dispositionQuarantine: 0n, dispositionReject: 8n, failingAlignment: true },
      { sourceIp: "198.51.100.7", messages: 5n, spfAlignedPassRate: 0, dkimAlignedPassRate: 0, dmarcPassRate: 0, dispositionNone: 0n, dispositionQuarantine: 5n, dispositionReject: 0n, failingAlignment: true },
    ]);
    expect(res.days).toEqual([
      { day: "2026-11-20", messages: 155n, spfAlignedPassRate: 120 / 155, dkimAlignedPassRate: 150 / 155, dmarcPassRate: 150 / 155, dispositionNone: 150n, dispositionQuarantine: 5n, dispositionReject: 0n },
      { day: "2026-11-21", messages: 48n, spfAlignedPassRate: 40 / 48, dkimAlignedPassRate: 40 / 48, dmarcPassRate: 40 / 48, dispositionNone: 40n, dispositionQuarantine: 0n, dispositionReject: 8n },
      { day: "2026-11-22", messages: 1n, spfAlignedPassRate: 1, dkimAlignedPassRate: 1, dmarcPassRate: 1, dispositionNone: 1n, dispositionQuarantine: 0n, dispositionReject: 0n },
    ]);
  });

  it("keeps a subdomain's rows for that domain alone", async () => {
    const res = await ask("news.acme.example");
    expect(res.reports).toBe(1);
    expect(res.reporters).toEqual(["Enterprise Outlook"]);
    expect((res.sources ?? []).map((s) => [s.sourceIp, s.messages, s.failingAlignment])).toEqual([["203.0.113.9", 3n, false]]);
    expect((await ask("other.example")).sources).toEqual([]);
  });

  it("counts reports whose period ends at or after `since`; by default the last 30 days", async () => {
    // Outlook's report ends 2026-11-21T23:59:59Z: in at that very second, out a second later.
    expect((await ask("acme.example", "2026-11-21T23:59:59Z")).days?.map((d) => d.day)).toEqual(["2026-11-21", "2026-11-22"]);
    expect((await ask("acme.example", "2026-11-22T00:00:00Z")).days?.map((d) => d.day)).toEqual(["2026-11-22"]);
    const old = { ...YAHOO, reportId: "old-1", begin: new Date("2026-10-01T00:00:00Z"), end: new Date("2026-10-29T11:59:59Z") };
    await reports.save(old, NOW);
    // NOW - 30 days = 2026-10-30T12:00Z: the October report is out by default, in with an earlier since.
    expect((await ask("acme.example")).reports).toBe(3);
    const withOld = await ask("acme.example", "2026-10-01T00:00:00Z");
    expect(withOld.reports).toBe(4);
    expect(withOld.days?.[0]).toMatchObject({ day: "2026-10-01", messages: 1n });
  });

  it("refuses a request without a workspace or with a bad domain (400s), and names a domain as the accounts unit does", async () => {
    const code = (p: Promise<unknown>) => p.then(() => "ok", (e) => errorInfoOf(e)?.code);
    expect(await code(summary({ workspaceId: "", domain: "acme.example" } as Parameters<typeof summary>[0]))).toBe("invalid_request");
    expect(await code(ask("not a domain"))).toBe("invalid_domain");
    expect((await ask("ACME.Example.")).reports).toBe(3);
  });
});
