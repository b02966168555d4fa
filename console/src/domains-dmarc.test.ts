import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { ReceivingService } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { silentLogger } from "@mailroom/kit/testing.js";
import { openMemoryStore } from "@mailroom/store/open.js";
import { directoryRoutes, memoryDirectory } from "../../services/audience/src/testing.js";
import { StoreDmarcReports } from "../../services/inbound/src/adapters/dmarc-store.js";
import { DmarcReportMailbox } from "../../services/inbound/src/domain/dmarc/mailbox.js";
import { dmarcSummaryHandler } from "../../services/inbound/src/dmarc-routes.js";
import { dmarcFixture, gzip, reportMessage, zip } from "../../services/inbound/src/dmarc-testing.js";
import { consoleGateway, csrfOf, Jar, type ConsoleBrowser } from "./sign-in-testing.js";

/**
 * The DMARC card of the domain page over the real accounts unit and the inbound unit's DMARC
 * mailbox and summary (in memory): reports received a few days ago are charted and listed
 * with their failing sources flagged, the DMARC record suggests the inbound unit's rua,
 * what a reporter wrote is escaped, and another workspace sees none of it.
 */
const KEYS = { acme: "mr_test_console_dmarc_acme", other: "mr_test_console_dmarc_other" };
const HOST = "mx.mailroom.example";

describe("console: a domain's DMARC reports", () => {
  let browser: ConsoleBrowser;
  const acme = new Jar();
  const other = new Jar();

  async function signIn(jar: Jar, apiKey: string) {
    const page = await browser.get("/console/sign-in", jar);
    expect((await browser.post("/console/sign-in", jar, { _csrf: csrfOf(page.body), apiKey })).statusCode).toBe(303);
  }

  beforeAll(async () => {
    const dir = await memoryDirectory({ dns: { inboundMxHost: HOST } });
    await dir.bootstrap.loadJson(JSON.stringify({ workspaces: [
      { id: "ws_cdmarc", name: "Acme", apiKeys: [{ key: KEYS.acme, scopes: ["api_user"] }], verifiedDomains: ["acme.example"] },
      { id: "ws_cdmarc_other", name: "Other", apiKeys: [{ key: KEYS.other, scopes: ["api_user"] }], verifiedDomains: ["other.example"] },
    ] }));
    await dir.senders.addDomain("ws_cdmarc", "pending.example");
    const reports = await StoreDmarcReports.open(openMemoryStore());
    const mailbox = new DmarcReportMailbox({ store: reports, hosts: [HOST], clock: { now: () => new Date() }, logger: silentLogger });
    // The fixtures' days, moved to the last few days so they fall in the page's 30-day window.
    const recent = (xml: Buffer, daysAgo: number) => {
      const begin = Math.floor(Date.now() / 86_400_000 - daysAgo) * 86_400;
      return Buffer.from(xml.toString("utf8").replace(/<begin>\d+<\/begin>/, `<begin>${begin}</begin>`).replace(/<end>\d+<\/end>/, `<end>${begin + 86_399}</end>`));
    };
    const to = `dmarc@${HOST}`;
    await mailbox.receive(await reportMessage({ to, attachments: [{ filename: "g.xml.gz", contentType: "application/gzip", content: gzip(recent(dmarcFixture("google-multi-record.xml"), 3)) }] }));
    await mailbox.receive(await reportMessage({ to, attachments: [{ filename: "o.zip", contentType: "application/zip", content: await zip({ "o.xml": recent(dmarcFixture("outlook-zip.xml"), 2) }) }] }));
    const hostile = recent(dmarcFixture("yahoo-single-record.xml"), 1).toString("utf8").replace("<org_name>Yahoo</org_name>", "<org_name>&lt;script&gt;alert(1)&lt;/script&gt;</org_name>");
    await mailbox.receive(await reportMessage({ to, attachments: [{ filename: "y.xml", contentType: "text/xml", content: Buffer.from(hostile) }] }));
    const transport = memoryTransport((router) => {
      directoryRoutes(dir)(router);
      router.service(ReceivingService, dmarcSummaryHandler({ reports, inboundHost: HOST, clock: { now: () => new Date() } }));
    });
    browser = await consoleGateway(transport, {
      secret: "console-dmarc-secret-0123456789abcdefgh", name: "console-dmarc", authCacheMs: 0,
      clients: { receiving: createClient(ReceivingService, transport) },
    });
    await signIn(acme, KEYS.acme);
    await signIn(other, KEYS.other);
  }, 60_000);
  afterAll(async () => browser?.app.close());

  it("suggests the inbound unit's rua in the DMARC record", async () => {
    const page = await browser.get("/console/domains/acme.example", acme);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`v=DMARC1; p=none; rua=mailto:dmarc@${HOST}`);
    expect(page.body).toContain(`*._report._dmarc.${HOST}`);
  });

  it("charts the days, lists the sources and flags those failing alignment", async () => {
    const page = (await browser.get("/console/domains/acme.example", acme)).body;
    const card = page.slice(page.indexOf('id="dmarc-card"'));
    expect(card).toContain("3 reports from");
    expect(card).toContain('id="dmarc-failing"');
    expect(card).toContain("2 sources sent mail that passed neither SPF nor DKIM aligned");
    // The chart: 3 days; day 1 is 150 passing DMARC (SPF or DKIM aligned) of 155, so a pass bar and a fail bar.
    expect(card).toMatch(/<svg class="chart"[^>]*role="img"/);
    expect(card).toMatch(/<title>\d{4}-\d{2}-\d{2}: 150 passed DMARC<\/title>/);
    expect(card).toMatch(/<title>\d{4}-\d{2}-\d{2}: 5 failed DMARC<\/title>/);
    // 198.51.100.7 passed neither SPF nor DKIM aligned: 0 % passed DMARC.
    expect(card).toMatch(/<code>198\.51\.100\.7<\/code><\/td><td data-label="Messages">5<\/td>\s*<td data-label="DMARC pass">0\.0%<\/td>/);
    const rows = [...card.matchAll(/<tr( class="failing")?><td data-label="Source IP"><code>([^<]+)<\/code><\/td><td data-label="Messages">(\d+)<\/td>/g)].map((m) => [m[2], Number(m[3]), !!m[1]]);
    expect(rows).toEqual([["192.0.2.10", 161, false], ["192.0.2.11", 30, false], ["2001:db8::25", 8, true], ["198.51.100.7", 5, true]]);
    expect(card).toContain('<td data-label="SPF aligned pass">0.0%</td><td data-label="DKIM aligned pass">100.0%</td>');
  });

  it("escapes what a reporter wrote", async () => {
    const page = (await browser.get("/console/domains/acme.example", acme)).body;
    expect(page).not.toContain("<script>alert(1)</script>");
    expect(page).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
  });

  it("shows nothing before the domain is verified, and nothing of another workspace's domain", async () => {
    const pending = (await browser.get("/console/domains/pending.example", acme)).body;
    expect(pending).toContain("shown here once the domain is verified");
    expect(pending).not.toContain('id="dmarc-sources"');
    expect((await browser.get("/console/domains/acme.example", other)).statusCode).toBe(404);
    const own = (await browser.get("/console/domains/other.example", other)).body;
    expect(own).toContain('id="dmarc-empty"');
    expect(own).not.toContain("192.0.2.10");
  });
});
