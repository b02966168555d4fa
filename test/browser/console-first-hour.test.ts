import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { CHROMIUM, launchChromium } from "./chromium.js";

/**
 * The console as a new user meets it in the first hour (issue 25), in a real browser
 * (Debian's chromium through playwright-core) against the real system with mail captured
 * locally (/dev/mail, no relay): the overview counts broadcasts too and its charts stay
 * legible on a phone; a draft's preview shows sample values; the progress chart starts when
 * sending did and the flash speaks in readable times; /dev/mail leads back to the console
 * and viewing a message there counts no open; contacts can be edited, unsubscribed and
 * deleted; suppressions can be added by hand; webhook event checkboxes keep their labels;
 * an email's plain text shows its real links. Each at 1280 and at 375 px wide where layout
 * matters. Screenshots go to test-results/console/.
 */
const KEY = "mr_test_console_first_hour_1";
const SHOTS = path.join(process.cwd(), "test-results", "console");
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 375, height: 740 };

if (!existsSync(CHROMIUM)) console.log(`test/browser/console-first-hour: skipped, ${CHROMIUM} is not installed (apt-get install chromium)`);

const person = (email: string, firstName: string, plan: string, timezone: string) => ({ email, firstName, timezone, subscribed: true, properties: { plan } });

describe.skipIf(!existsSync(CHROMIUM))("console: the first hour of a new user (issue 25)", () => {
  let sys: TestSystem;
  let browser: Browser;
  let desktop: BrowserContext;
  let page: Page;
  let phone: Page;
  let emailId = "";
  let broadcastUrl = "";

  const shot = async (name: string, p: Page = page) => {
    await p.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  };
  const url = (p: string) => `${sys.gatewayUrl}/console${p}`;
  const flash = (p: Page = page) => p.locator(".flash").first().textContent();
  /** Load a page and wait for it (a form POST answers 303 and the browser loads the next page). */
  const submit = (p: Page, click: () => Promise<void>) => Promise.all([p.waitForEvent("load"), click()]);
  const noSidewaysScroll = async (p: Page) =>
    expect(await p.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(p.viewportSize()!.width);
  /** Every visible chart label: its rendered height and computed font size (CSS px). */
  const chartLabels = (p: Page) => p.$$eval(".chart-plot .tick", (els) => els
    .filter((el) => (el as HTMLElement).offsetParent !== null)
    .map((el) => {
      const r = el.getBoundingClientRect();
      return { text: el.textContent ?? "", height: r.height, left: r.left, right: r.right, top: r.top, font: parseFloat(getComputedStyle(el).fontSize), cls: el.className };
    }));
  const expectLegibleLabels = async (p: Page, min: number) => {
    const labels = await chartLabels(p);
    expect(labels.length).toBeGreaterThanOrEqual(min);
    for (const l of labels) {
      expect(l.font, JSON.stringify(l)).toBeGreaterThanOrEqual(10);
      expect(l.height, JSON.stringify(l)).toBeGreaterThanOrEqual(10);
      expect(l.left, JSON.stringify(l)).toBeGreaterThanOrEqual(0);
      expect(l.right, JSON.stringify(l)).toBeLessThanOrEqual(p.viewportSize()!.width);
    }
    // Labels on one axis do not run into each other.
    const xs = labels.filter((l) => /\bx\b/.test(l.cls)).sort((a, b) => a.left - b.left);
    for (let i = 1; i < xs.length; i++) if (Math.abs(xs[i].top - xs[i - 1].top) < 4) expect(xs[i].left, JSON.stringify(xs)).toBeGreaterThanOrEqual(xs[i - 1].right);
  };
  const openCount = async (id: string): Promise<number> => (await sys.api("GET", `/v1/emails/${id}`, { key: KEY })).body.email.opens;
  const sentTile = async (p: Page) => Number(await p.locator('[data-total="sent"]').textContent());

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    sys = await useSystem({
      bootstrap: {
        workspaces: [{
          id: "ws_first_hour", name: "First Hour Co", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
          flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
          monthlyLimit: 10_000, sendingAccountNew: false,
          contactProperties: [{ slug: "plan", type: "string" }],
          contacts: [
            person("ann@example.test", "Ann", "pro", "Europe/Paris"),
            person("bob@example.test", "Bob", "team", "America/New_York"),
            person("cat@example.test", "Cat", "free", "Asia/Tokyo"),
          ],
        }],
      },
      // Captured locally (no relay): /dev/mail is mounted. Content outlives delivery an hour.
      smtp: false,
    });
    browser = await launchChromium();
    desktop = await browser.newContext({ viewport: DESKTOP });
    page = await desktop.newPage();
    // Forms with data-confirm ask first (progressive enhancement): say yes.
    page.on("dialog", (d) => void d.accept());
    await page.goto(url("/sign-in"));
    await page.getByLabel("API key").fill(KEY);
    await submit(page, () => page.getByRole("button", { name: "Sign in" }).click());
    phone = await (await browser.newContext({ viewport: PHONE, storageState: await desktop.storageState() })).newPage();
    phone.on("dialog", (d) => void d.accept());
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await sys?.stop();
  });

  it("/dev/mail links back to the console, and viewing a message there counts no open", async () => {
    const subject = `Tracked ${Date.now()}`;
    const res = await sys.api("POST", "/v1/emails", {
      key: KEY,
      body: {
        from: "Acme <team@acme.test>", to: "zoe@example.test", subject,
        html: "<h1>Welcome</h1><p><a href=\"https://acme.test/start?step=1&amp;via=mail\">Start here</a></p>",
        settings: { trackOpens: true, trackClicks: true },
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    emailId = res.body.email.id;

    await expect.poll(async () => {
      await page.goto(`${sys.gatewayUrl}/dev/mail`);
      return page.getByRole("link", { name: subject }).count();
    }, { timeout: 30_000, interval: 500 }).toBe(1);
    // The way back: a link to the console on the list and on each message.
    const back = page.getByRole("link", { name: "Console", exact: true });
    expect(await back.getAttribute("href")).toBe("/console");
    await submit(page, () => back.click());
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Overview");

    await page.goto(`${sys.gatewayUrl}/dev/mail`);
    await submit(page, () => page.getByRole("link", { name: subject }).click());
    expect(await page.getByRole("link", { name: "Console", exact: true }).getAttribute("href")).toBe("/console");
    const frame = page.frameLocator("iframe");
    expect(await frame.getByRole("heading", { name: "Welcome" }).count()).toBe(1);
    const srcdoc = (await page.locator("iframe").getAttribute("srcdoc"))!;
    expect(srcdoc).not.toMatch(/\/t\/o\//);
    await shot("dev-mail-message");
    // The raw source has the pixel as sent; the viewer did not load it.
    const raw = await (await fetch(`${page.url()}/raw`)).text();
    const pixel = raw.replace(/=\r?\n/g, "").replace(/=3D/g, "=").match(/https?:\/\/[^\s"'()<>]+\/t\/o\/[A-Za-z0-9_.~%-]+/)?.[0];
    expect(pixel, "the captured message has an open pixel").toBeTruthy();

    // Opens within a second of each other are one (deduplicated): wait past that, then load
    // the pixel once as a mail client would. The count is that one open, not two.
    await page.waitForTimeout(2_500);
    expect(await openCount(emailId)).toBe(0);
    expect((await fetch(pixel!)).status).toBe(200);
    await expect.poll(() => openCount(emailId), { timeout: 20_000, interval: 300 }).toBe(1);
    await page.reload();
    await page.waitForTimeout(1_500);
    expect(await openCount(emailId)).toBe(1);
  }, 90_000);

  it("an email's plain text shows its real links, not preview.invalid ones", async () => {
    await page.goto(url(`/emails/${emailId}`));
    const text = (await page.locator("pre").textContent())!;
    expect(text).not.toContain("preview.invalid");
    expect(text).toContain("https://acme.test/start?step=1&via=mail");
    const frameHtml = (await page.locator("iframe").getAttribute("srcdoc"))!;
    expect(frameHtml).not.toContain("preview.invalid");
    expect(frameHtml).not.toMatch(/\/t\/[oc]\//);
    expect(await page.frameLocator("iframe").getByRole("link", { name: "Start here" }).getAttribute("href")).toBe("https://acme.test/start?step=1&via=mail");
    await shot("email-plain-text-links");
    // Looking at it in the console counted nothing either.
    await page.waitForTimeout(1_500);
    expect(await openCount(emailId)).toBe(1);
  });

  it("previews a draft without a contact with sample values, and schedules with a readable time", async () => {
    await page.goto(url("/broadcasts/new"));
    await page.getByLabel("Name (only you see it)").fill("First news");
    await page.getByLabel("Subject", { exact: true }).fill("News for {{firstName}}");
    await page.getByLabel("From name").fill("Acme");
    await page.getByLabel("From address").fill("news@acme.test");
    await page.getByLabel("HTML", { exact: true }).fill("<p>Hello {{firstName}}, you are on {{plan}}.</p><p><a href=\"https://acme.test/news\">Read</a></p>");
    await submit(page, () => page.getByRole("button", { name: "Save draft" }).click());
    expect(await flash()).toContain("Draft saved");
    broadcastUrl = page.url().replace(/[?#].*$/, "");

    // No contact chosen: sample values where the merge fields are, never "Hello ,".
    const body = (await page.frameLocator("iframe.mail").locator("body").textContent())!;
    expect(body).toContain("Hello [firstName], you are on [plan].");
    expect(body).not.toContain("Hello ,");
    expect(await page.locator("[data-preview-subject]").textContent()).toBe("News for [firstName]");
    expect(await page.locator("[data-preview-sample]").textContent()).toContain("sample values");
    const text = (await page.locator("details pre").first().textContent())!;
    expect(text).toContain("[firstName]");
    await shot("broadcast-preview-sample");
    // A chosen contact still gets their own data.
    await page.getByLabel("Preview for contact (email)").fill("bob@example.test");
    await submit(page, () => page.getByRole("button", { name: "Show preview" }).click());
    expect(await page.frameLocator("iframe.mail").locator("body").textContent()).toContain("Hello Bob, you are on team.");

    await page.getByLabel("As soon as possible (ASAP)").check();
    await submit(page, () => page.getByRole("button", { name: "Schedule" }).click());
    const message = (await flash())!;
    expect(message).toContain("Scheduled (ASAP)");
    expect(message).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
    expect(message).toMatch(/\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    await shot("broadcast-scheduled-flash");

    // Later: the send time in the flash is the one chosen, in words with its zone.
    const later = await sys.api("POST", "/v1/broadcasts", {
      key: KEY, body: { name: "Later", subject: "s", fromEmail: "news@acme.test", fromName: "Acme", html: "<p>x</p>", audience: { all: true } },
    });
    expect(later.status, JSON.stringify(later.body)).toBe(201);
    await page.goto(url(`/broadcasts/${later.body.broadcast.id}`));
    await page.getByLabel("Later, at:").check();
    const at = new Date(Date.now() + 2 * 86_400_000);
    at.setUTCHours(9, 30, 0, 0);
    await page.getByLabel("Send time (UTC)").fill(at.toISOString().slice(0, 16));
    await submit(page, () => page.getByRole("button", { name: "Schedule" }).click());
    expect(await flash()).toBe(`Scheduled (PROGRESSIVE) for ${at.toISOString().slice(0, 10)} 09:30 UTC.`);
    await submit(page, () => page.getByRole("button", { name: "Cancel and edit" }).click());
  }, 60_000);

  it("the progress chart starts when sending started, with legible labels at 1280 and 375 px", async () => {
    await page.goto(broadcastUrl);
    await expect.poll(() => page.locator("[data-status]").textContent(), { timeout: 60_000, interval: 500 }).toBe("Completed");
    await expect.poll(async () => {
      await page.reload();
      return page.locator('[data-counter="sent"]').textContent();
    }, { timeout: 30_000, interval: 500 }).toBe("3");
    const scheduled = Date.parse((await page.locator("[data-scheduled] time").getAttribute("datetime"))!);
    const started = (await page.locator("[data-started] time").getAttribute("datetime"))!;
    const svg = page.locator("#chart svg.chart");
    const start = (await svg.getAttribute("data-start"))!;
    expect(start).toBe(started);
    expect(Date.parse(start)).toBeGreaterThanOrEqual(scheduled);
    expect(Date.parse((await svg.getAttribute("data-end"))!)).toBeGreaterThanOrEqual(Date.parse(start));
    // The axis's first label is that time.
    expect(await page.locator("[data-axis-start]").textContent()).toBe(`${start.slice(11, 19)} UTC`);
    await expectLegibleLabels(page, 4);
    await shot("broadcast-progress-1280");

    await phone.goto(broadcastUrl);
    await expectLegibleLabels(phone, 4);
    await noSidewaysScroll(phone);
    await shot("broadcast-progress-375", phone);
  }, 120_000);

  it("the overview counts broadcast messages with transactional ones, and its chart labels are legible at 375 px", async () => {
    // 1 transactional email + a 3-recipient broadcast.
    await expect.poll(async () => {
      await page.goto(url(""));
      return sentTile(page);
    }, { timeout: 30_000, interval: 500 }).toBe(4);
    expect(await page.locator("[data-split]").textContent()).toBe("1 transactional · 3 broadcast");
    expect(await page.locator("main").textContent()).toContain("Transactional and broadcast emails");
    const today = new Date().toISOString().slice(0, 10);
    await page.locator("details summary", { hasText: "Numbers per day" }).click();
    const row = await page.locator("table.data tr", { has: page.locator(`th:text-is("${today}")`) }).locator("td").allTextContents();
    expect(row[0]).toBe("4");
    expect(row[row.length - 1]).toBe("3");
    await expectLegibleLabels(page, 6);
    await shot("overview-1280");

    await phone.goto(url(""));
    expect(await sentTile(phone)).toBe(4);
    await expectLegibleLabels(phone, 4);
    await noSidewaysScroll(phone);
    await shot("overview-375", phone);

    // A group is a transactional email's: filtered by one, the overview has no broadcasts.
    await page.goto(url("?groupBy=onboarding"));
    expect(await sentTile(page)).toBe(0);
    expect(await page.locator("[data-split]").count()).toBe(0);
  }, 60_000);

  it("edits, unsubscribes, resubscribes and deletes a contact through CSRF-protected forms", async () => {
    const contactUrl = async (email: string) => {
      await page.goto(url(`/contacts?search=${encodeURIComponent(email)}`));
      return page.getByRole("link", { name: email }).getAttribute("href");
    };
    await page.goto(`${sys.gatewayUrl}${await contactUrl("ann@example.test")}`);
    // Every form carries the CSRF token.
    for (const form of await page.locator("main form[method=post]").all()) expect(await form.locator('input[name="_csrf"]').count()).toBe(1);
    await page.getByLabel("First name").fill("Annie");
    await page.getByLabel("plan", { exact: false }).fill("team");
    await page.getByLabel("Timezone").fill("Mars/Olympus");
    await submit(page, () => page.getByRole("button", { name: "Save contact" }).click());
    // A bad value comes back with the form as typed and the reason.
    expect(await flash()).toMatch(/time ?zone/i);
    expect(await page.getByLabel("First name").inputValue()).toBe("Annie");
    await page.getByLabel("Timezone").fill("Europe/Berlin");
    await submit(page, () => page.getByRole("button", { name: "Save contact" }).click());
    expect(await flash()).toContain("Contact saved");
    const props = (await page.locator("main").textContent())!;
    expect(props).toContain("Annie");
    expect(props).toContain("Europe/Berlin");
    expect(await page.locator("table.data").first().textContent()).toContain("team");
    await shot("contact-edited");

    await submit(page, () => page.getByRole("button", { name: "Unsubscribe" }).click());
    expect(await flash()).toContain("is unsubscribed");
    expect(await page.locator("h1").textContent()).toContain("Unsubscribed");
    const annId = new URL(page.url()).pathname.split("/").pop();
    const api = await sys.api("GET", `/v1/contacts/${annId}`, { key: KEY });
    expect(api.status).toBe(200);
    expect(JSON.stringify(api.body)).toContain("UNSUBSCRIBED");
    await submit(page, () => page.getByRole("button", { name: "Resubscribe" }).click());
    expect(await flash()).toContain("subscribed again");
    expect(await page.locator("h1").textContent()).toContain("Subscribed");

    const catPath = (await contactUrl("cat@example.test"))!;
    await phone.goto(`${sys.gatewayUrl}${catPath}`);
    await noSidewaysScroll(phone);
    await shot("contact-actions-375", phone);
    await submit(phone, () => phone.getByRole("button", { name: "Delete contact" }).click());
    expect(await flash(phone)).toContain("deleted");
    expect(new URL(phone.url()).pathname).toBe("/console/contacts");
    expect(await phone.getByRole("link", { name: "cat@example.test" }).count()).toBe(0);
    expect((await sys.api("GET", `/v1/contacts/${catPath.split("/").pop()}`, { key: KEY })).status).toBe(404);

    // Without the CSRF token the same form is refused.
    const bob = (await contactUrl("bob@example.test"))!.split("/").pop();
    const forged = await page.evaluate(async (action) => (await fetch(action, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "x=1" })).status, url(`/contacts/${bob}/delete`));
    expect(forged).toBe(403);
    expect((await sys.api("GET", `/v1/contacts/${bob}`, { key: KEY })).status).toBe(200);
  }, 60_000);

  it("adds a suppression by hand", async () => {
    await page.goto(url("/contacts/suppressions"));
    await page.getByLabel("Email address").fill("Manual@Example.test");
    await page.getByLabel("Note (optional)").fill("asked by phone");
    await submit(page, () => page.getByRole("button", { name: "Suppress" }).click());
    expect(await flash()).toContain("is suppressed");
    const row = page.locator("table tbody tr", { hasText: "manual@example.test" });
    expect(await row.textContent()).toContain("Added by hand");
    expect(await row.textContent()).toContain("asked by phone");
    // A bad address is refused with the reason.
    await page.getByLabel("Email address").fill("not-an-address@");
    await page.evaluate(() => document.querySelector<HTMLInputElement>("#s-email")!.setAttribute("type", "text"));
    await submit(page, () => page.getByRole("button", { name: "Suppress" }).click());
    expect(await flash()).toMatch(/not a valid email/);
    // The address gets no mail now.
    const check = await sys.api("POST", "/v1/emails", { key: KEY, body: { from: "team@acme.test", to: "manual@example.test", subject: "x", html: "<p>x</p>" } });
    expect(check.status, JSON.stringify(check.body)).toBe(200);
    await expect.poll(async () => JSON.stringify((await sys.api("GET", `/v1/emails/${check.body.email.id}`, { key: KEY })).body), { timeout: 10_000 }).toMatch(/suppress/i);
    await phone.goto(url("/contacts/suppressions"));
    await noSidewaysScroll(phone);
    await shot("suppressions-375", phone);
  });

  it("keeps every webhook event's checkbox beside its label at 375 and 1280 px", async () => {
    for (const p of [phone, page]) {
      await p.goto(url("/webhooks"));
      const pairs = await p.$$eval(".check", (els) => els.map((el) => {
        const box = el.querySelector("input")!.getBoundingClientRect();
        const label = el.querySelector("label")!.getBoundingClientRect();
        return { text: el.textContent, box: { left: box.left, right: box.right, top: box.top, bottom: box.bottom }, label: { left: label.left, top: label.top, bottom: label.bottom } };
      }));
      expect(pairs.length).toBeGreaterThanOrEqual(20);
      for (const { text, box, label } of pairs) {
        // Beside it, on its line: the label starts just right of the box and level with it.
        expect(label.left, text!).toBeGreaterThan(box.right);
        expect(label.left - box.right, text!).toBeLessThan(16);
        expect(label.top, text!).toBeLessThan(box.bottom);
        expect(label.bottom, text!).toBeGreaterThan(box.top);
      }
      await noSidewaysScroll(p);
      await shot(`webhooks-form-${p.viewportSize()!.width}`, p);
    }
  });
});
