import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import path from "node:path";
import dns2 from "dns2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { startSystem, type TestSystem } from "../harness/system.js";
import { CHROMIUM, launchChromium } from "./chromium.js";

/**
 * The web console in a real browser (Debian's chromium through playwright-core) against the
 * real system: sign in with a key, add a domain and verify it against a DNS server on
 * loopback (the accounts unit resolves through it), send an email through the API and find it
 * by recipient, open its timeline, and look at the stats. Screenshots go to
 * test-results/console/.
 */
const KEY = "mr_test_console_core_key_1";
const WORKSPACE = "ws_console_core";
const DOMAIN = "console-mail.test";
const SCREENSHOTS = path.join(process.cwd(), "test-results", "console");

/** A real DNS server (UDP) answering TXT queries from a mutable zone; nothing else exists. */
async function startDnsServer(zone: Map<string, string[][]>) {
  const { Packet } = dns2;
  const server = dns2.createUDPServer((request, send) => {
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    if (question.type === Packet.TYPE.TXT) {
      for (const chunks of zone.get(question.name.toLowerCase()) ?? []) {
        response.answers.push({ name: question.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 1, data: chunks } as never);
      }
    }
    void send(response);
  });
  await server.listen(0, "127.0.0.1");
  return { port: (server.address() as AddressInfo).port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

if (!existsSync(CHROMIUM)) console.log(`test/browser/console-core: skipped, ${CHROMIUM} is not installed (apt-get install chromium)`);

describe.skipIf(!existsSync(CHROMIUM))("web console in a browser: sign-in, domains, emails, stats", () => {
  let sys: TestSystem;
  let browser: Browser;
  let page: Page;
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  const zone = new Map<string, string[][]>();
  const recipient = `zoe.${Date.now()}@example.test`;
  const subject = `Console check ${Date.now()}`;

  const screenshot = async (name: string) => {
    const file = path.join(SCREENSHOTS, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`screenshot: ${file}`);
  };
  /** Every visible form control has a label (its own <label for>, a wrapping label or aria-label). */
  const unlabelled = () => page.$$eval("input:not([type=hidden]), select, textarea", (els) =>
    els.filter((el) => {
      const id = el.getAttribute("id");
      const byFor = id ? document.querySelector(`label[for="${CSS.escape(id)}"]`) : null;
      return !byFor && !el.closest("label") && !el.getAttribute("aria-label") && !el.getAttribute("aria-labelledby");
    }).map((el) => el.outerHTML));

  beforeAll(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    dns = await startDnsServer(zone);
    sys = await startSystem({
      bootstrap: {
        workspaces: [{
          id: WORKSPACE, name: "Console Co", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
          flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
          monthlyLimit: 1000, sendingAccountNew: false,
        }],
      },
      // Content outlives delivery an hour, so the console can still show it.
      env: { MAILROOM_DNS_SERVERS: `127.0.0.1:${dns.port}`, MAILROOM_EMAIL_CONTENT_RETENTION_HOURS: "1" },
      smtp: false,
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"],
    });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1100, height: 800 } })).newPage();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await sys?.stop();
    await dns?.close();
  });

  it("sends a visitor to sign-in, refuses a wrong key and signs in with the workspace's key", async () => {
    await page.goto(`${sys.gatewayUrl}/console/emails`);
    expect(new URL(page.url()).pathname).toBe("/console/sign-in");
    expect(await unlabelled()).toEqual([]);
    await page.getByLabel("API key").fill("mr_test_not_the_key_99");
    await page.getByRole("button", { name: "Sign in" }).click();
    expect(await page.getByRole("alert").textContent()).toContain("not valid");
    await screenshot("sign-in-refused");

    // Keyboard only: the key field, then Enter submits.
    await page.getByLabel("API key").focus();
    await page.keyboard.type(KEY);
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/console\/emails/);
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Emails");
    expect(await page.locator("header").textContent()).toContain("Console Co");
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === "mr_console")!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/console" });
    expect(session.value).not.toContain(KEY);
    expect(await page.evaluate(() => document.cookie)).toBe("");
  });

  it("adds a domain, shows its DNS records, and verifies it once they are published", async () => {
    await page.getByRole("link", { name: "Domains" }).click();
    expect(await unlabelled()).toEqual([]);
    await page.getByLabel("Add a domain").fill(DOMAIN);
    await page.getByRole("button", { name: "Add domain" }).click();
    await page.waitForURL(new RegExp(`/console/domains/${DOMAIN.replace(".", "\\.")}$`));
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe(DOMAIN);
    expect(await page.locator("#domain-status").textContent()).toContain("Pending DNS");
    const rows = await page.locator("table tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.querySelector("code")?.textContent ?? td.textContent?.trim())));
    const dkim = rows.find((r) => r[2]?.includes("_domainkey"))!;
    expect(dkim[0]).toBe("TXT");
    expect(dkim[3]).toMatch(/^v=DKIM1; k=rsa; p=/);
    expect(rows.some((r) => r[2] === `_dmarc.${DOMAIN}`)).toBe(true);
    expect(rows.some((r) => r[0] === "MX")).toBe(true);
    // Copy buttons appear (the script runs) and are named for what they copy.
    expect(await page.getByRole("button", { name: /Copy value of the dkim record/ }).isVisible()).toBe(true);
    await screenshot("domain-pending");

    // Nothing published: the re-check runs the lookup and says why it failed.
    await page.getByRole("button", { name: "Re-check DNS now" }).click();
    expect(await page.getByRole("alert").first().textContent()).toContain("not verified");
    expect(await page.locator("#domain-status").textContent()).toContain("Not verified");

    // Publish every TXT record the page asks for on the test DNS server, then re-check.
    for (const r of rows.filter((x) => x[0] === "TXT")) zone.set(r[2]!.toLowerCase(), [r[3]!.match(/.{1,255}/g)!]);
    await page.getByRole("button", { name: "Re-check DNS now" }).click();
    expect(await page.getByRole("status").first().textContent()).toContain(`${DOMAIN} is verified`);
    expect(await page.locator("#domain-status").textContent()).toContain("Verified");
    await screenshot("domain-verified");

    // The verified domain sends through the API.
    const sent = await sys.api("POST", "/v1/emails", { key: KEY, body: { from: `hello@${DOMAIN}`, to: "x@example.test", subject: "from the new domain", html: "<p>x</p>" } });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  });

  it("finds an email sent through the API by recipient and shows its timeline", { timeout: 60_000 }, async () => {
    const res = await sys.api("POST", "/v1/emails", {
      key: KEY,
      body: { from: "Acme <team@acme.test>", to: recipient, subject, html: "<h1>Hello Zoë</h1><p><a href=\"https://acme.test/start\">Start</a></p>", groupBy: "onboarding" },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const id = res.body.email.id as string;

    await Promise.all([page.waitForEvent("load"), page.getByRole("link", { name: "Emails" }).click()]);
    expect(await unlabelled()).toEqual([]);
    await page.getByLabel("Recipient").fill(recipient.slice(0, 12).toUpperCase());
    await page.getByLabel("Status").selectOption("");
    // The search is a form GET: wait for the new page, not just the new URL, before reading it.
    await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Search" }).click()]);
    expect(new URL(page.url()).searchParams.get("recipient")).toBe(recipient.slice(0, 12).toUpperCase());
    const found = page.getByRole("link", { name: recipient });
    expect(await found.count()).toBe(1);
    expect(await page.locator("#emails tbody tr").count()).toBe(1);
    await screenshot("emails-search");

    // A search for someone else does not list it.
    await page.getByLabel("Recipient").fill("nobody-here");
    await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Search" }).click()]);
    expect(await page.getByText("No email matches these filters.").count()).toBe(1);

    // Delivery (captured locally) finishes shortly: reload until the timeline says delivered.
    const detail = await page.goto(`${sys.gatewayUrl}/console/emails/${id}`);
    expect(detail?.status(), (await page.locator("main").textContent()) ?? "").toBe(200);
    for (let i = 0; i < 50 && !(await page.locator("#timeline").textContent())?.includes("Delivered"); i++) {
      await page.waitForTimeout(200);
      await page.reload();
    }
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe(subject);
    const timeline = (await page.locator("#timeline").textContent())!;
    expect(timeline).toContain("Accepted by the API");
    expect(timeline).toContain("Sent (handed to delivery)");
    expect(timeline).toContain("Delivered");
    expect(await page.locator("table").first().textContent()).toContain("onboarding");
    // The rendered content is in a frame without scripts, forms or same-origin access, and
    // its links lead nowhere (looking at an email must not record a click).
    expect(await page.locator("iframe").getAttribute("sandbox")).toBe("");
    const frame = page.frameLocator("iframe");
    expect(await frame.getByRole("heading", { name: "Hello Zoë" }).count()).toBe(1);
    const href = (await frame.getByRole("link", { name: "Start" }).getAttribute("href"))!;
    expect(href.startsWith(sys.gatewayUrl), href).toBe(false);
    expect(await page.locator("pre").textContent()).toContain("Hello Zoë");
    await screenshot("email-timeline");

    // Another workspace's id, or an id that cannot exist, is the same 404 page.
    const missing = await page.goto(`${sys.gatewayUrl}/console/emails/trs_00000000000000000000000000`);
    expect(missing?.status()).toBe(404);
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Not found");
  });

  it("shows the stats as charts with a table of the same numbers, at desktop and phone width", async () => {
    await page.getByRole("link", { name: "Overview" }).click();
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Overview");
    expect(await unlabelled()).toEqual([]);
    expect(await page.locator("svg.chart[role=img]").count()).toBe(2);
    expect(await page.locator("#groups").textContent()).toContain("onboarding");
    const sentTile = await page.locator("#totals .card").first().textContent();
    expect(Number(sentTile?.replace(/\D+/g, ""))).toBeGreaterThanOrEqual(2);
    await screenshot("stats");

    await page.setViewportSize({ width: 375, height: 740 });
    await page.reload();
    // Nothing overflows sideways at phone width.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot("stats-phone");
    await page.goto(`${sys.gatewayUrl}/console/domains/${DOMAIN}`);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot("domain-phone");
    await page.setViewportSize({ width: 1100, height: 800 });
  });

  it("signs out: the session cookie is gone and pages ask to sign in again", async () => {
    // The first Tab lands on the skip link: keyboard users can jump over the nav.
    await page.goto(`${sys.gatewayUrl}/console`);
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/console\/sign-in$/);
    expect(await page.getByRole("status").textContent()).toContain("signed out");
    expect((await page.context().cookies()).some((c) => c.name === "mr_console")).toBe(false);
    await page.goto(`${sys.gatewayUrl}/console/domains`);
    expect(new URL(page.url()).pathname).toBe("/console/sign-in");
  });
});
