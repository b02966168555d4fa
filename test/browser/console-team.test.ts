import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { CHROMIUM, launchChromium } from "./chromium.js";

/**
 * The team console in a real browser (Debian's chromium through playwright-core) against the
 * real system (accounts, audience, email, renderer, delivery capturing mail, gateway): the
 * owner signs in with a magic link mailed by the system sender (read from the captured mail at /dev/mail),
 * invites a member, the member accepts through the invitation mail's link and is signed in,
 * signs out and back in with a magic link, the owner changes the member's role, and the audit
 * log shows the change with the owner as actor. Screenshots go to test-results/console/.
 */
const WORKSPACE = "ws_console_team";
const OWNER = "owner@team-console.test";
const MEMBER = "member@team-console.test";
const SCREENSHOTS = path.join(process.cwd(), "test-results", "console");

if (!existsSync(CHROMIUM)) console.log(`test/browser/console-team: skipped, ${CHROMIUM} is not installed (apt-get install chromium)`);

describe.skipIf(!existsSync(CHROMIUM))("team console in a browser: magic link, invitation, role change, audit log", () => {
  let sys: TestSystem;
  let browser: Browser;
  let ownerContext: BrowserContext;
  let memberContext: BrowserContext;
  let owner: Page;
  let member: Page;

  const screenshot = async (page: Page, name: string) => {
    const file = path.join(SCREENSHOTS, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`screenshot: ${file}`);
  };

  /**
   * The console link of the newest captured mail to `to` whose subject contains `subject`,
   * read as a person would: open /dev/mail, open the message, take the link it lists.
   */
  async function linkFromMail(page: Page, to: string, subject: string, seen: Set<string>): Promise<string> {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      await page.goto(`${sys.gatewayUrl}/dev/mail`);
      const items = page.locator("ul.mail li").filter({ hasText: `to ${to}` }).filter({ hasText: subject });
      const hrefs = await items.locator("a").evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).href));
      const fresh = hrefs.find((h) => !seen.has(h));
      if (fresh) {
        seen.add(fresh);
        await page.goto(fresh);
        expect(await page.locator("p.muted").first().textContent()).toContain("From Mailroom");
        const link = await page.locator("h2:text('Links') + ul a").first().getAttribute("href");
        expect(link).toMatch(/\/console\/(magic|invite)\//);
        return link!;
      }
      await page.waitForTimeout(300);
    }
    throw new Error(`no mail "${subject}" to ${to} captured; gateway log:\n${await sys.log("gateway")}`);
  }
  const seenMail = new Set<string>();

  async function signInByEmail(page: Page, email: string): Promise<string> {
    await page.goto(`${sys.gatewayUrl}/console/sign-in`);
    await page.getByLabel("Email address").fill(email);
    await page.getByRole("button", { name: "Email me a sign-in link" }).click();
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Check your email");
    const link = await linkFromMail(page, email, "sign-in link", seenMail);
    await page.goto(link);
    // The link itself signs nobody in (mail scanners fetch links): a button does.
    expect((await page.context().cookies()).some((c) => c.name === "mr_console")).toBe(false);
    await page.getByRole("button", { name: "Continue to the console" }).click();
    await page.waitForURL((u) => u.pathname === "/console" || u.pathname === "/console/");
    expect(await page.locator("header").textContent()).toContain(email);
    return link;
  }

  /** Presses the button of a console link in a fresh browser; resolves with the page's heading and text. */
  async function pressLink(link: string, button: string) {
    const context = await browser.newContext();
    try {
      const p = await context.newPage();
      await p.goto(link);
      await p.getByRole("button", { name: button }).click();
      await p.waitForLoadState();
      return { heading: await p.getByRole("heading", { level: 1 }).textContent(), text: await p.locator("main").textContent(), signedIn: (await context.cookies()).some((c) => c.name === "mr_console") };
    } finally {
      await context.close();
    }
  }

  beforeAll(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    sys = await useSystem({
      bootstrap: {
        workspaces: [
          {
            id: WORKSPACE, name: "Team Console Co", timezone: "UTC",
            apiKeys: [], verifiedEmails: [], verifiedDomains: ["team-console.test"], members: [{ email: OWNER, role: "OWNER" }],
            // The email API: a key made on the keys page sends to a contact added by hand (its activity).
            flags: { broadcastEarlyAccess: false, emailApiAddon: true, verified: true },
            monthlyLimit: 1000, sendingAccountNew: false,
          },
          {
            // The system sender's own workspace: nobody's keys read its mail (sign-in links).
            id: "ws_console_system", name: "Mailroom system", timezone: "UTC",
            apiKeys: [], verifiedEmails: [], verifiedDomains: ["mailroom-system.test"], members: [],
            flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
            monthlyLimit: 1000, sendingAccountNew: false,
          },
        ],
      },
      env: { MAILROOM_SYSTEM_FROM: "Mailroom <signin@mailroom-system.test>", MAILROOM_SYSTEM_WORKSPACE: "ws_console_system" },
      smtp: false,
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway", "webhooks"],
    });
    browser = await launchChromium();
    ownerContext = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    memberContext = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    owner = await ownerContext.newPage();
    member = await memberContext.newPage();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await sys?.stop();
  });

  it("signs the owner in with a magic link from the captured mail", async () => {
    await signInByEmail(owner, OWNER);
    expect(await owner.locator("header").textContent()).toContain("(OWNER)");
    await screenshot(owner, "team-owner-signed-in");
  }, 60_000);

  it("lets the owner change the workspace's timezone on the settings page, at desktop and phone width", async () => {
    await owner.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Settings", exact: true }).click();
    await owner.waitForURL(/\/console\/settings$/);
    expect(await owner.getByRole("heading", { level: 1 }).textContent()).toBe("Settings");
    expect(await owner.getByLabel("Timezone").inputValue()).toBe("UTC");
    // A zone that does not exist is refused on the form, with what was typed.
    await owner.getByLabel("Timezone").fill("Europe/Atlantis");
    await Promise.all([owner.waitForEvent("load"), owner.getByRole("button", { name: "Save settings" }).click()]);
    expect(await owner.getByRole("alert").textContent()).toContain("is not an IANA time zone");
    expect(await owner.getByLabel("Timezone").inputValue()).toBe("Europe/Atlantis");
    await owner.getByLabel("Timezone").fill("Europe/Paris");
    await Promise.all([owner.waitForEvent("load"), owner.getByRole("button", { name: "Save settings" }).click()]);
    expect(await owner.locator(".flash").first().textContent()).toContain("Settings saved.");
    expect(await owner.getByLabel("Timezone").inputValue()).toBe("Europe/Paris");
    expect(await owner.locator("main").textContent()).toContain("emails sent in");

    // At phone width the nav folds behind "Menu": the header is two rows, nothing scrolls sideways.
    await owner.setViewportSize({ width: 375, height: 740 });
    const nav = owner.getByRole("navigation", { name: "Console" });
    try {
      await owner.reload();
      const header = await owner.locator("header.top").boundingBox();
      expect(header!.height).toBeLessThanOrEqual(2 * 56);
      expect(await nav.isVisible()).toBe(false);
      expect(await owner.evaluate(() => document.documentElement.scrollWidth <= innerWidth)).toBe(true);
      await screenshot(owner, "settings-phone");
      // Every link is one tap away.
      await owner.locator("label.nav-button").click();
      expect(await nav.getByRole("link", { name: "Settings", exact: true }).isVisible()).toBe(true);
      expect(await nav.getByRole("button", { name: "Sign out" }).isVisible()).toBe(true);
      expect(await owner.evaluate(() => document.documentElement.scrollWidth <= innerWidth)).toBe(true);
      await screenshot(owner, "settings-phone-menu");
      await nav.getByRole("link", { name: "Team", exact: true }).click();
      await owner.waitForURL(/\/console\/team$/);
      expect(await owner.evaluate(() => document.documentElement.scrollWidth <= innerWidth)).toBe(true);
    } finally {
      await owner.setViewportSize({ width: 1200, height: 900 });
    }
  }, 60_000);

  it("creates an API key, adds a contact by hand, opens its activity and a failing webhook's health, at 1280 and 375 px", async () => {
    const console_ = (p: string) => `${sys.gatewayUrl}/console${p}`;
    const submit = (click: Promise<void>) => Promise.all([owner.waitForEvent("load"), click]);
    /** At every step: nothing scrolls sideways; at phone width the header (with the folded nav) is at most two rows. */
    const checkLayout = async (name: string) => {
      const width = owner.viewportSize()!.width;
      expect(await owner.evaluate(() => document.documentElement.scrollWidth - innerWidth), `${name}: sideways scroll`).toBeLessThanOrEqual(0);
      const header = (await owner.locator("header.top").boundingBox())!;
      if (width <= 375) expect(header.height, `${name}: header rows`).toBeLessThanOrEqual(2 * 56);
      await screenshot(owner, `issue45-${name}-${width}`);
    };
    let firstKey = "";
    try {
      for (const width of [1280, 375]) {
        await owner.setViewportSize({ width, height: width > 400 ? 900 : 740 });

        // An API key: made on the keys page, its secret shown once, then "Last used" once it was used.
        await owner.goto(console_("/keys"));
        await owner.getByLabel("Name", { exact: true }).fill(`Server ${width}`);
        await owner.getByLabel("Role", { exact: true }).selectOption("EDITOR");
        await submit(owner.getByRole("button", { name: "Create key" }).click());
        const secret = (await owner.locator("#key-secret").textContent())!.trim();
        expect(secret).toMatch(/^mr_live_/);
        await checkLayout("key-created");
        firstKey ||= secret;
        expect((await sys.api("GET", "/v1/contacts?limit=1", { key: secret })).status).toBe(200);
        const row = owner.locator("tr[data-key]").filter({ hasText: `Server ${width}` });
        await expect.poll(async () => (await owner.goto(console_("/keys")), row.locator("[data-last-used]").textContent()), { timeout: 15_000 }).toMatch(/UTC/);
        expect(await owner.locator("tr[data-key]").filter({ hasText: "Server" }).locator("[data-last-used]").allTextContents()).not.toContain("");
        await checkLayout("keys");

        // A contact added by hand, then its activity timeline (an email sent to it with the new key).
        const email = `hand-${width}@example.test`;
        await owner.goto(console_("/contacts"));
        await submit(owner.getByRole("link", { name: "Add contact" }).click());
        await owner.getByLabel("Email address").fill(email);
        await owner.getByLabel("First name (optional)").fill(`Hand${width}`);
        await submit(owner.getByRole("button", { name: "Add contact" }).click());
        expect(await owner.locator("main").textContent()).toContain(email);
        const contactUrl = owner.url();
        const sent = await sys.api("POST", "/v1/emails", { key: secret, body: { from: "Team <hello@team-console.test>", to: email, subject: `Hello ${width}`, html: "<p>Hi</p>" } });
        expect(sent.status, JSON.stringify(sent.body)).toBe(200);
        await expect.poll(async () => (await owner.goto(contactUrl), owner.locator("ol.timeline li").allTextContents()), { timeout: 20_000 }).toEqual(expect.arrayContaining([expect.stringContaining(`Hello ${width}`)]));
        await checkLayout("contact-activity");

        // A webhook to an endpoint that refuses connections: its page shows the failures, not a healthy look.
        const hook = await sys.api("POST", "/v1/webhooks", { key: firstKey, body: { url: "http://127.0.0.1:9/refused", events: ["CONTACT_CREATED"] } });
        expect(hook.status, JSON.stringify(hook.body)).toBe(200);
        expect((await sys.api("POST", `/v1/webhooks/${hook.body.webhook.id}/test`, { key: firstKey })).status).toBe(200);
        const failures = owner.locator('[data-health="failures"]');
        await expect.poll(async () => (await owner.goto(console_(`/webhooks/${hook.body.webhook.id}`)), Number((await failures.textContent())?.match(/\d+/)?.[0] ?? 0)), { timeout: 30_000 }).toBeGreaterThanOrEqual(1);
        expect(await owner.locator('[data-health="last-success"]').textContent()).toMatch(/^none among/);
        await checkLayout("webhook-health");
      }
    } finally {
      await owner.setViewportSize({ width: 1200, height: 900 });
    }
  }, 180_000);

  it("invites a member, who accepts through the invitation mail and is signed in", async () => {
    await owner.getByRole("link", { name: "Team", exact: true }).click();
    await owner.waitForURL(/\/console\/team$/);
    await owner.getByLabel("Email address").fill(MEMBER);
    await owner.getByLabel("Role", { exact: true }).selectOption("VIEWER");
    await owner.getByRole("button", { name: "Send invitation" }).click();
    expect(await owner.getByRole("heading", { level: 1 }).textContent()).toBe("Invitation sent");
    const shown = await owner.locator("#invite-link").textContent();
    expect(shown).toMatch(/\/console\/invite\//);
    await screenshot(owner, "team-invitation-sent");

    const link = await linkFromMail(member, MEMBER, "invited", seenMail);
    expect(link).toBe(shown);
    await member.goto(link);
    await member.getByRole("button", { name: "Accept the invitation" }).click();
    await member.waitForURL((u) => u.pathname === "/console" || u.pathname === "/console/");
    expect(await member.locator("header").textContent()).toContain(`${MEMBER} (VIEWER)`);
    expect(await member.locator(".flash").first().textContent()).toContain("joined");

    // The same link again: spent.
    const again = await pressLink(link, "Accept the invitation");
    expect(again).toMatchObject({ heading: "Please sign in", signedIn: false });
    expect(again.text).toContain("already accepted");
  }, 60_000);

  it("lets the member sign out and back in with a magic link", async () => {
    await member.getByRole("button", { name: "Sign out", exact: true }).click();
    await member.waitForURL(/\/console\/sign-in/);
    expect(await member.locator(".flash").first().textContent()).toContain("signed out");
    const link = await signInByEmail(member, MEMBER);
    // The team's rules through the console: a link works once, and an altered one not at all.
    const reused = await pressLink(link, "Continue to the console");
    expect(reused).toMatchObject({ heading: "Please sign in", signedIn: false });
    expect(reused.text).toContain("already used");
    const token = link.split("/").pop()!;
    const altered = link.replace(token, token.slice(0, -2) + (token.endsWith("AA") ? "BB" : "AA"));
    const tampered = await pressLink(altered, "Continue to the console");
    expect(tampered).toMatchObject({ heading: "Please sign in", signedIn: false });
    expect(tampered.text).toContain("not valid");
    await member.getByRole("link", { name: "Sessions" }).click();
    expect(await member.locator("table.data tbody tr").count()).toBeGreaterThanOrEqual(1);
    expect(await member.locator("table.data").textContent()).toContain("This browser");
    // A viewer sees the team, read only, and no audit log.
    await member.getByRole("link", { name: "Team", exact: true }).click();
    expect(await member.getByRole("button", { name: "Send invitation" }).count()).toBe(0);
    expect(await member.getByRole("link", { name: "Audit log" }).count()).toBe(0);
  }, 60_000);

  it("changes the member's role; the member's console follows and the audit log shows the change", async () => {
    await owner.getByRole("link", { name: "Team", exact: true }).click();
    await owner.getByLabel(`Role of ${MEMBER}`, { exact: true }).selectOption("EDITOR");
    await owner.getByRole("button", { name: `Change the role of ${MEMBER}` }).click();
    expect(await owner.locator(".flash").first().textContent()).toContain(`${MEMBER} is now EDITOR`);
    const row = owner.locator("table.data tbody tr").filter({ hasText: MEMBER });
    expect(await row.locator("td").nth(1).textContent()).toBe("EDITOR");
    await screenshot(owner, "team-role-changed");

    // The member's session sees the new role within the session cache's 2 seconds.
    await member.waitForTimeout(2_500);
    await member.reload();
    expect(await member.locator("header").textContent()).toContain(`${MEMBER} (EDITOR)`);

    await owner.getByRole("link", { name: "Audit log" }).click();
    await owner.getByLabel("Resource").fill("member");
    const deadline = Date.now() + 20_000;
    let entry = owner.locator("table.data tbody tr").filter({ hasText: "member.role_change" });
    while (Date.now() < deadline) {
      await owner.getByRole("button", { name: "Filter" }).click();
      await owner.waitForLoadState();
      entry = owner.locator("table.data tbody tr").filter({ hasText: "member.role_change" });
      if (await entry.count()) break;
      await owner.waitForTimeout(500);
    }
    expect(await entry.count()).toBe(1);
    const text = await entry.textContent();
    expect(text).toContain(OWNER);
    expect(text).toMatch(/member:mbr_/);
    expect(text).toContain("EDITOR");
    await screenshot(owner, "team-audit-log");
  }, 60_000);
});
