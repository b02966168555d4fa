import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { CHROMIUM, launchChromium, signInWithKey } from "./chromium.js";

/**
 * The console's broadcasts, contacts and webhooks pages in a real browser (Debian's
 * chromium through playwright-core) against the real system: every unit as a process,
 * nats-server, an SMTP sink that accepts everything, and a local webhook receiver.
 * Screenshots go to test-results/console/.
 */
const KEY = "mr_test_console_content_1";
const OTHER_KEY = "mr_test_console_other_1";
const SHOTS = path.join(process.cwd(), "test-results", "console");

if (!existsSync(CHROMIUM)) console.log(`test/browser/console-content: skipped, ${CHROMIUM} is not installed (apt-get install chromium)`);

const person = (email: string, firstName: string, plan: string) => ({ email, firstName, subscribed: true, properties: { plan } });
const workspace = (id: string, key: string, contacts: unknown[] = []) => ({
  id, name: id === "ws_console" ? "Console Co" : id, timezone: "UTC",
  apiKeys: [{ key, scopes: ["api_user"] }],
  verifiedEmails: [], verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
  flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
  monthlyLimit: 10_000, sendingAccountNew: false,
  contactProperties: [{ slug: "plan", type: "string" }],
  contacts,
});

describe.skipIf(!existsSync(CHROMIUM))("console: broadcasts, contacts and webhooks in a browser", () => {
  let sys: TestSystem;
  let browser: Browser;
  let page: Page;
  const hooks: Array<{ body: string; headers: http.IncomingHttpHeaders }> = [];
  let receiver: http.Server;
  let receiverUrl = "";

  const shot = async (name: string, p: Page = page) => {
    await p.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  };
  const url = (p: string) => `${sys.gatewayUrl}/console${p}`;
  const flash = () => page.locator(".flash").first().textContent();
  /** Every visible form control has a label a screen reader announces. */
  const expectLabelled = async (p: Page = page) => {
    const unlabelled = await p.evaluate(() =>
      [...document.querySelectorAll<HTMLInputElement>("input:not([type=hidden]), select, textarea")]
        .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute("aria-label") && !el.getAttribute("aria-labelledby"))
        .map((el) => el.outerHTML.slice(0, 80)));
    expect(unlabelled).toEqual([]);
  };

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        hooks.push({ body: Buffer.concat(chunks).toString("utf8"), headers: req.headers });
        res.writeHead(200).end("ok");
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    sys = await useSystem({
      bootstrap: {
        workspaces: [
          workspace("ws_console", KEY, [person("ann@example.test", "Ann", "pro"), person("bob@example.test", "Bob", "team")]),
          workspace("ws_console_other", OTHER_KEY),
        ],
      },
    });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
    // The schedule and delete forms ask for confirmation (progressive enhancement): say yes.
    page.on("dialog", (d) => void d.accept());
    await signInWithKey(page, url("/sign-in"), KEY);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await sys?.stop();
    await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
  });

  let broadcastUrl = "";

  it("creates a draft, previews it for a contact, sends a test and edits it", async () => {
    await page.goto(url("/broadcasts"));
    await page.getByRole("link", { name: "New draft" }).click();
    await page.getByLabel("Name (only you see it)").fill("Spring news");
    await page.getByLabel("Subject", { exact: true }).fill("Spring for {{firstName}}");
    await page.getByLabel("From name").fill("Acme");
    await page.getByLabel("From address").fill("news@acme.test");
    await page.getByLabel("HTML", { exact: true }).fill("<p>Hi {{firstName}}, you are on {{plan}}.</p><p><a href=\"https://acme.test/spring\">Read</a></p>");
    await page.getByRole("button", { name: "Save draft" }).click();
    expect(await flash()).toContain("Draft saved");
    broadcastUrl = page.url().replace(/[?#].*$/, "");
    expect(broadcastUrl).toMatch(/\/console\/broadcasts\/cmp_[0-9a-z]{26}$/);

    await page.getByLabel("Preview for contact (email)").fill("bob@example.test");
    await page.getByRole("button", { name: "Show preview" }).click();
    await expect.poll(() => page.frameLocator("iframe.mail").locator("body").textContent()).toContain("Hi Bob, you are on team.");
    expect(await page.locator("[data-preview-subject]").textContent()).toBe("Spring for Bob");
    expect(await page.locator("iframe.mail").getAttribute("sandbox")).toBe("");
    await expectLabelled();
    await shot("broadcast-draft-preview");

    await page.getByLabel("owner@acme.test").check();
    await page.getByRole("button", { name: "Send test" }).click();
    expect(await flash()).toContain("Test sent to owner@acme.test");
    await expect.poll(() => sys.sink!.messages.filter((m) => m.to.includes("owner@acme.test") && m.raw.includes("[TEST]")).length, { timeout: 30_000 }).toBe(1);

    // Editing a draft: a bad merge field comes back with the form as typed and the reason.
    await page.getByLabel("Subject", { exact: true }).fill("Spring for {{nickname}}");
    await page.getByRole("button", { name: "Save draft" }).click();
    expect(await flash()).toContain("nickname");
    expect(await page.getByLabel("Subject", { exact: true }).inputValue()).toBe("Spring for {{nickname}}");
    await page.getByLabel("Subject", { exact: true }).fill("Spring, {{firstName}}");
    await page.getByRole("button", { name: "Save draft" }).click();
    expect(await flash()).toContain("Draft saved");
  }, 60_000);

  it("sends it now and the progress page reaches COMPLETED with counters and a chart", async () => {
    await page.goto(broadcastUrl);
    // Every method is explained next to its choice.
    for (const m of ["ASAP", "PROGRESSIVE", "SMART", "WARMUP", "OPTIMAL"]) expect(await page.locator(`#dm-${m}-h`).textContent()).toBeTruthy();
    await page.getByLabel("As soon as possible (ASAP)").check();
    await page.getByRole("button", { name: "Schedule" }).click();
    expect(await flash()).toContain("Scheduled (ASAP)");
    // The page polls progress.json (no reload): the status badge turns COMPLETED.
    await expect.poll(() => page.locator("[data-status]").textContent(), { timeout: 60_000, interval: 500 }).toBe("Completed");
    expect(await page.locator('[data-counter="recipients"]').textContent()).toBe("2");
    expect(await page.locator('[data-counter="sent"]').textContent()).toBe("2");
    await expect.poll(() => page.locator("#chart svg.chart").count()).toBe(1);
    expect(await page.locator("#chart svg.chart").getAttribute("aria-label")).toContain("Sent 2");
    await shot("broadcast-progress-completed");
    // Without JS the same page is complete too (server-rendered).
    await page.reload();
    expect(await page.locator("[data-status]").textContent()).toBe("Completed");
    const merged = sys.sink!.messages.filter((m) => m.to.includes("bob@example.test"));
    expect(merged).toHaveLength(1);
  }, 90_000);

  it("imports a CSV through its preview and column mapping, with a progress bar, and reports the bad row by line", async () => {
    await page.goto(url("/contacts/import"));
    await expectLabelled();
    const csv = "email,firstName,plan\ncarl@example.test,Carl,pro\nnot-an-address,Bad,pro\ndora@example.test,Dora,free\n";
    await page.getByLabel("CSV file (up to 10 MB)").setInputFiles({ name: "people.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
    await page.getByRole("button", { name: "Preview" }).click();
    // The preview shows the first rows before anything is written.
    expect(await page.locator("main").textContent()).toContain("carl@example.test");
    await expectLabelled();
    await page.getByRole("button", { name: "Import" }).click();
    await expect.poll(() => page.locator("h1 .badge").textContent(), { timeout: 30_000 }).toBe("Done");
    expect(await page.locator("[data-created]").textContent()).toContain("2 contacts created");
    expect(await page.locator("[data-rejected-count]").textContent()).toContain("1 rejected");
    const rejected = page.locator("table tbody tr");
    expect(await rejected.count()).toBe(1);
    expect(await rejected.first().locator("td").first().textContent()).toBe("3");
    expect(await rejected.first().textContent()).toContain("not-an-address");
    expect(await page.locator("progress#bar").getAttribute("value")).toBe("100");
    await shot("contacts-import-report");

    await page.goto(url("/contacts"));
    await page.getByLabel("Search email or name").fill("carl");
    await page.getByRole("button", { name: "Filter" }).click();
    await expectLabelled();
    expect(await page.locator("table tbody tr").count()).toBe(1);
    await page.getByRole("link", { name: "carl@example.test" }).click();
    expect(await page.locator("h1").textContent()).toContain("carl@example.test");
    expect(await page.locator("main").textContent()).toContain("CSV_IMPORT");
    await shot("contact-detail");
  }, 60_000);

  it("adds a webhook, sends a test event and shows the delivery with its response code", async () => {
    await page.goto(url("/webhooks"));
    await expectLabelled();
    await page.getByLabel("Endpoint URL").fill(receiverUrl);
    await page.getByLabel("Name (optional)").fill("Local receiver");
    await page.getByLabel("EMAIL_SENT").check();
    await page.getByRole("button", { name: "Add webhook" }).click();
    expect(await flash()).toContain("Webhook added");
    expect(await page.locator("main").textContent()).toContain("EMAIL_SENT");
    // From the keyboard: focus the button and press Enter.
    await page.getByRole("button", { name: "Send test event" }).focus();
    await Promise.all([page.waitForEvent("load"), page.keyboard.press("Enter")]);
    expect(await flash()).toContain("Test event queued");
    await expect.poll(() => hooks.some((h) => h.body.includes("TESTING_CONNECTION")), { timeout: 30_000 }).toBe(true);
    const webhookUrl = page.url();
    await expect.poll(async () => {
      await page.goto(webhookUrl);
      return page.locator("table[aria-labelledby=deliveries-h] tbody tr").first().textContent();
    }, { timeout: 30_000, interval: 500 }).toMatch(/TESTING_CONNECTION.*Succeeded.*200/s);
    await shot("webhook-deliveries");
    await page.getByRole("button", { name: /^Resend TESTING_CONNECTION/ }).first().click();
    expect(await flash()).toContain("queued again");
    await expect.poll(() => hooks.filter((h) => h.body.includes("TESTING_CONNECTION")).length, { timeout: 30_000 }).toBe(2);
  }, 60_000);

  it("answers another workspace's ids with 404 pages and fits a phone", async () => {
    const other = await sys.api("POST", "/v1/broadcasts", {
      key: OTHER_KEY,
      body: { name: "Theirs", subject: "s", fromEmail: "x@acme.test", fromName: "X", html: "<p>x</p>", audience: { all: true } },
    });
    expect(other.status).toBe(201);
    const res = await page.goto(url(`/broadcasts/${other.body.broadcast.id}`));
    expect(res?.status()).toBe(404);
    expect(await page.locator("main").textContent()).not.toContain("Theirs");
    expect((await page.goto(url("/webhooks/wh_00000000000000000000000000")))?.status()).toBe(404);

    const phone = await (await browser.newContext({ viewport: { width: 390, height: 844 }, storageState: await page.context().storageState() })).newPage();
    await phone.goto(url("/broadcasts"));
    const width = await phone.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(390);
    await shot("broadcasts-phone", phone);
    await phone.goto(broadcastUrl);
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shot("broadcast-progress-phone", phone);
  }, 60_000);
});
