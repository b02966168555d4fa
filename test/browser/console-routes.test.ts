import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import path from "node:path";
import dns2 from "dns2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { connectClient } from "@mailroom/kit";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { startSystem, type TestSystem } from "../harness/system.js";
import { startSmtpSink, type SmtpSink } from "../harness/smtp-sink.js";
import { freePort } from "../harness/ports.js";
import { CHROMIUM, launchChromium, signInWithKey } from "./chromium.js";

/**
 * The console's view of delivery routes (DESIGN §9.7) in a real browser against the real
 * system: delivery with three routes (a relay sink, a relay that refuses connections, a
 * direct route reserved for another workspace), the Delivery page with their health and
 * counters, the route on an email's page, and the domain page's direct-sending DNS checks
 * answered by a DNS server on loopback (PTR, A, TXT) through the accounts unit's resolver.
 * The Delivery page is the operator's (owners and admins): the browser signs in with an ADMIN
 * key owned by the workspace's owner, as `mailroom key create --role ADMIN --owner` makes one.
 */
const KEY = "mr_test_console_routes_key_1";
const WORKSPACE = "ws_console_routes";
const OWNER = "owner@acme.test";
const SCREENSHOTS = path.join(process.cwd(), "test-results", "console");

type Zone = { txt: Map<string, string>; a: Map<string, string>; ptr: Map<string, string> };

async function startDnsServer(zone: Zone) {
  const { Packet } = dns2;
  const server = dns2.createUDPServer((request, send) => {
    const response = Packet.createResponseFromRequest(request);
    const [q] = request.questions;
    const name = q.name.toLowerCase();
    const base = { name: q.name, class: Packet.CLASS.IN, ttl: 1 };
    const txt = zone.txt.get(name);
    const a = zone.a.get(name);
    const ptr = zone.ptr.get(name);
    if (q.type === Packet.TYPE.TXT && txt) response.answers.push({ ...base, type: Packet.TYPE.TXT, data: [txt] } as never);
    if (q.type === Packet.TYPE.A && a) response.answers.push({ ...base, type: Packet.TYPE.A, address: a } as never);
    if (q.type === Packet.TYPE.PTR && ptr) response.answers.push({ ...base, type: Packet.TYPE.PTR, domain: ptr } as never);
    void send(response);
  });
  await server.listen(0, "127.0.0.1");
  return { port: (server.address() as AddressInfo).port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

if (!existsSync(CHROMIUM)) console.log(`test/browser/console-routes: skipped, ${CHROMIUM} is not installed (apt-get install chromium)`);

describe.skipIf(!existsSync(CHROMIUM))("the console's delivery routes in a browser", () => {
  let sys: TestSystem;
  let sink: SmtpSink;
  let browser: Browser;
  let page: Page;
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  const zone: Zone = {
    ptr: new Map([["1.0.0.127.in-addr.arpa", "mta.acme.test"]]),
    a: new Map([["mta.acme.test", "127.0.0.1"]]),
    txt: new Map([["acme.test", "v=spf1 ip4:127.0.0.1 -all"]]),
  };
  const screenshot = async (name: string) => {
    const file = path.join(SCREENSHOTS, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`screenshot: ${file}`);
  };
  const ids: string[] = [];

  beforeAll(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    dns = await startDnsServer(zone);
    sink = await startSmtpSink();
    const closedPort = await freePort();
    const routes = [
      { name: "primary", url: sink.url, weight: 1, provider: "ses" },
      // Nothing listens there: refused connections mark it down and its mail fails over.
      { name: "backup", url: `smtp://127.0.0.1:${closedPort}`, weight: 3, lanes: ["transactional"] },
      { name: "mx", direct: true, weight: 1, workspaces: ["ws_someone_else"] },
    ];
    sys = await startSystem({
      bootstrap: {
        workspaces: [{
          id: WORKSPACE, name: "Routes Co", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: [{ email: OWNER, role: "OWNER" }],
          flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
          monthlyLimit: 1000, sendingAccountNew: false,
        }],
      },
      env: {
        MAILROOM_DNS_SERVERS: `127.0.0.1:${dns.port}`,
        MAILROOM_DELIVERY_ROUTES: JSON.stringify(routes),
        MAILROOM_DELIVERY_EHLO_NAME: "mta.acme.test",
        MAILROOM_DELIVERY_LOCAL_ADDRESS: "127.0.0.1",
      },
      smtp: false,
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"],
    });
    for (let i = 0; i < 8; i++) {
      const res = await sys.api("POST", "/v1/emails", { key: KEY, body: { from: "team@acme.test", to: `r${i}@example.test`, subject: `Route ${i}`, html: "<p>Hi</p>" } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      ids.push(res.body.email.id);
    }
    await sink.waitFor(8, 60_000).catch(async (err) => {
      throw new Error(`${(err as Error).message}\n--- delivery log ---\n${await sys.log("delivery")}`);
    });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    // The bootstrap key is EDITOR (no owner answers for it): the Delivery page needs ADMIN.
    const accounts = connectClient(AccountsService, `http://127.0.0.1:${sys.ports.accounts}`);
    const { plainKey } = await accounts.createApiKey({ workspaceId: WORKSPACE, name: "operator", role: "ADMIN", ownerMemberId: OWNER });
    await signInWithKey(page, `${sys.gatewayUrl}/console/sign-in`, plainKey);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await sys?.stop();
    await sink?.stop();
    await dns?.close();
  });

  it("shows the mode, the direct sender's facts and each route's health and counters", async () => {
    await Promise.all([page.waitForEvent("load"), page.getByRole("link", { name: "Delivery" }).click()]);
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Delivery");
    expect(await page.getByRole("link", { name: "Delivery" }).getAttribute("aria-current")).toBe("page");
    const facts = (await page.locator("#delivery-facts").textContent())!;
    expect(facts).toContain("Relay: mail goes through the SMTP relays below");
    expect(facts).toContain("mta.acme.test");
    expect(facts).toContain("127.0.0.1");

    const rows = await page.locator("#routes tbody tr").evaluateAll((trs) =>
      trs.map((tr) => ({
        ...Object.fromEntries([...tr.querySelectorAll("td[data-label]")].map((c) => [c.getAttribute("data-label"), (c.textContent ?? "").trim()])),
        ...Object.fromEntries([...tr.querySelectorAll("[data-field]")].map((c) => [c.getAttribute("data-field"), (c.textContent ?? "").replace(/^[^:]*:\s*/, "").trim()])),
        Route: tr.querySelector("[data-field=Route]")?.textContent ?? "",
        Kind: tr.querySelector("[data-field=Kind]")?.textContent ?? "",
        Target: tr.querySelector("[data-field=Target]")?.textContent ?? "",
      })));
    expect(rows.map((r) => r.Route)).toEqual(["primary", "backup", "mx"]);
    const [primary, backup, mx] = rows as Array<Record<string, string>>;
    expect(primary).toMatchObject({ Kind: "relay", Target: sink.url, Weight: "1", Lanes: "Both", Workspaces: "All", Provider: "ses" });
    expect(primary.Health).toContain("Up");
    expect(Number(primary.Sent)).toBe(8);
    expect(backup).toMatchObject({ Kind: "relay", Weight: "3", Lanes: "transactional", Sent: "0" });
    expect(backup.Provider).toBeUndefined();
    expect(backup.Health).toMatch(/Down\s*until .* UTC/);
    expect(backup["Last error"]).toMatch(/ECONNREFUSED|refused/i);
    // Another workspace's reservation is shown without its id.
    expect(mx).toMatchObject({ Kind: "direct", Target: "MX", Workspaces: "1 other workspace only" });
    expect(await page.content()).not.toContain("ws_someone_else");
    await screenshot("delivery-routes");
  });

  it("shows the route on an email's page and in its timeline", async () => {
    const id = ids[0];
    await page.goto(`${sys.gatewayUrl}/console/emails/${id}`);
    for (let i = 0; i < 50 && !(await page.locator("#timeline").textContent())?.includes("via route"); i++) {
      await page.waitForTimeout(200);
      await page.reload();
    }
    expect(await page.locator("#timeline").textContent()).toContain("Delivered (accepted by the receiving server) via route primary");
    const details = (await page.locator("table").first().textContent())!;
    expect(details).toMatch(/Delivery route\s*primary/);
    await screenshot("email-route");
  });

  it("checks the domain's DNS for direct sending: forward-confirmed reverse DNS and SPF", async () => {
    await page.goto(`${sys.gatewayUrl}/console/domains/acme.test`);
    const card = page.locator("#direct-dns");
    expect(await card.count()).toBe(1);
    const text = (await card.textContent())!;
    expect(text).toContain("Confirmed");
    expect(text).toMatch(/127\.0\.0\.1\s*→\s*mta\.acme\.test\s*→\s*127\.0\.0\.1/);
    expect(text).not.toContain("Not the EHLO name");
    const spf = await page.locator("#direct-spf tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => (td.textContent ?? "").trim())));
    expect(spf[0][0]).toContain("acme.test");
    expect(spf[0][1]).toBe("pass");
    expect(spf[0][2]).toBe("v=spf1 ip4:127.0.0.1 -all");
    // The return path's domain publishes nothing: the page says what to add.
    expect(spf[1][0]).toContain("return path");
    expect(spf[1][1]).toContain("none");
    expect(spf[1][1]).toContain("ip4:127.0.0.1");
    await screenshot("domain-direct-dns");

    // The PTR name stops resolving back: the page says the check failed and why.
    zone.a.set("mta.acme.test", "192.0.2.1");
    await page.reload();
    expect(await card.textContent()).toContain("mta.acme.test does not resolve back to 127.0.0.1");
  });

  it("keeps the Delivery page from an EDITOR session: no link, and the console's 403 page at its address", async () => {
    const context = await browser.newContext();
    try {
      const editor = await context.newPage();
      await signInWithKey(editor, `${sys.gatewayUrl}/console/sign-in`, KEY);
      expect(await editor.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Team" }).count()).toBe(1);
      expect(await editor.getByRole("link", { name: "Delivery" }).count()).toBe(0);
      const res = await editor.goto(`${sys.gatewayUrl}/console/delivery`);
      expect(res?.status()).toBe(403);
      expect(await editor.getByRole("heading", { level: 1 }).textContent()).toBe("Not allowed");
      expect(await editor.content()).not.toContain(sink.url);
    } finally {
      await context.close();
    }
  });
});
