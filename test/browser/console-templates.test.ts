import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { CHROMIUM, launchChromium, signInWithKey } from "./chromium.js";

/**
 * The console's Templates page in a real browser (Debian's chromium through playwright-core)
 * against the real system (the accounts unit's Liquid engine renders the preview, the SMTP sink
 * receives the test send): the sample templates in the list, an edit that changes the
 * preview, the preview following what is typed before it is saved, a syntax error marked at its line, the preview at 375 px and in dark mode, a test
 * send and a restore. At 1280 and 375 px. Screenshots go to test-results/console/.
 */
const KEY = "mr_test_console_templates_1";
const WS = "ws_console_templates";
const SHOTS = path.join(process.cwd(), "test-results", "console");

if (!existsSync(CHROMIUM)) console.log(`test/browser/console-templates: skipped, ${CHROMIUM} is not installed (apt-get install chromium)`);

describe.skipIf(!existsSync(CHROMIUM))("console: the Templates page in a browser", () => {
  let sys: TestSystem;
  let browser: Browser;
  let page: Page;

  const url = (p: string) => `${sys.gatewayUrl}/console${p}`;
  const flash = () => page.locator(".flash").first().textContent();
  const preview = (scheme: "light" | "dark" = "light") => page.frameLocator(`iframe.mail.${scheme}`).locator("body");
  const shot = async (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    sys = await useSystem({
      bootstrap: {
        workspaces: [{
          id: WS, name: "Templates Co", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
          flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
          monthlyLimit: 10_000, sendingAccountNew: false,
          contactProperties: [{ slug: "plan", type: "string" }],
          contacts: [{ email: "ann@example.test", firstName: "Ann", subscribed: true, properties: { plan: "pro" } }],
          // The samples a new workspace starts with (deploy/dev-workspace.ts).
          templates: [
            { name: "welcome", displayName: "Welcome", subject: "Welcome to Acme, {{firstName}}", html: "<h1>Welcome, {{firstName}}!</h1><p>Thanks for joining Acme.</p>", fromEmail: "hello@acme.test", fromName: "Acme" },
            { name: "receipt", displayName: "Receipt", subject: "Your receipt for order {{orderId}}", html: "<p>Hi {{firstName}}, we received {{amount}}.</p>", fromEmail: "billing@acme.test" },
          ],
        }],
      },
    });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.on("dialog", (d) => void d.accept());
    await signInWithKey(page, url("/sign-in"), KEY);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await sys?.stop();
  });

  it("lists the sample templates from the nav", async () => {
    await page.goto(url(""));
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Templates" }).click();
    await page.waitForURL(/\/console\/templates$/);
    expect(await page.locator('tr[data-template="welcome"]').textContent()).toContain("Template");
    expect(await page.locator('tr[data-template="receipt"]').count()).toBe(1);
    await shot("templates-list");
  }, 60_000);

  it("edits a template at 1280 px and the preview beside it changes", async () => {
    await page.getByRole("link", { name: "welcome" }).click();
    await page.waitForURL(/\/console\/templates\/welcome$/);
    await page.getByLabel("Sample contact").selectOption({ label: "ann@example.test (Ann)" });
    await page.getByRole("button", { name: "Save and preview" }).click();
    await expect.poll(() => preview().textContent()).toContain("Welcome, Ann!");
    // Editor and preview side by side.
    const editorBox = (await page.locator(".code-editor").first().boundingBox())!;
    const frameBox = (await page.locator("iframe.mail.light").boundingBox())!;
    expect(frameBox.x).toBeGreaterThan(editorBox.x + editorBox.width - 1);

    await page.getByLabel("HTML", { exact: true }).fill(
      `<p>Hi {{ firstName | default: "there" }}!</p>\n{% if plan == "pro" %}<p>Thanks for being Pro.</p>{% endif %}\n<style>@media (prefers-color-scheme: dark){body{background:#000;color:#fff}}</style>`);
    await page.getByRole("button", { name: "Save", exact: true }).click();
    expect(await flash()).toContain("Saved as version 2");
    await expect.poll(() => preview().textContent()).toContain("Hi Ann!");
    expect(await preview().textContent()).toContain("Thanks for being Pro.");
    for (const frame of await page.locator("iframe.mail").all()) expect(await frame.getAttribute("sandbox")).toBe("");
    // JSON values over the contact's.
    await page.getByLabel("JSON values").fill('{"firstName": "Bo", "plan": "free"}');
    await page.getByRole("button", { name: "Save and preview" }).click();
    await expect.poll(() => preview().textContent()).toContain("Hi Bo!");
    expect(await preview().textContent()).not.toContain("Pro");
    await shot("template-editor-1280");
  }, 60_000);

  it("updates the preview as you type, without saving (the live preview)", async () => {
    const at = page.url();
    await page.getByLabel("HTML", { exact: true }).fill('<p>Live {{ firstName | upcase }}</p>{% for i in (1..3) %}<b>{{ i }}</b>{% endfor %}');
    await expect.poll(() => preview().textContent()).toContain("Live BO");
    expect(await preview().textContent()).toContain("123");
    await page.getByLabel("Subject", { exact: true }).fill("Live subject {{ firstName }}");
    await expect.poll(() => page.locator("[data-preview-subject]").textContent()).toBe("Live subject Bo");
    // The preview's own values count too.
    await page.getByLabel("JSON values").fill('{"firstName": "Cy"}');
    await expect.poll(() => preview().textContent()).toContain("Live CY");
    // Bad Liquid is shown in the preview at its line.
    await page.getByLabel("HTML", { exact: true }).fill("<p>a</p>\n{% if x %}");
    await expect.poll(() => page.locator("[data-preview-error]").textContent()).toMatch(/html, line 2, column 1/);
    await shot("template-live-preview");
    expect(page.url()).toBe(at);
    // Nothing was saved: the page shows the saved version 2 and its render.
    await page.goto(url("/templates/welcome"));
    expect(await page.content()).toContain("version 2 ·");
    await expect.poll(() => preview().textContent()).toContain("Hi there!");
  }, 60_000);

  it("marks a Liquid syntax error at its line and keeps what was typed", async () => {
    await page.getByLabel("HTML", { exact: true }).fill("<p>one</p>\n<p>two {{ firstName </p>");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    expect(await flash()).toContain("Not saved");
    expect(await page.locator(".code-editor .gutter span.err").first().textContent()).toBe("2");
    expect(await page.getByRole("alert").filter({ hasText: "Line 2" }).count()).toBeGreaterThan(0);
    expect(await page.getByLabel("HTML", { exact: true }).inputValue()).toBe("<p>one</p>\n<p>two {{ firstName </p>");
    await shot("template-editor-error");
  }, 60_000);

  it("shows the preview at 375 px and in dark mode, on a phone-sized window too", async () => {
    await page.goto(url("/templates/welcome"));
    await page.getByLabel("Phone (375 px)").check();
    expect((await page.locator("iframe.mail.light").boundingBox())!.width).toBeCloseTo(375, 0);
    expect(await page.locator("iframe.mail.dark").isVisible()).toBe(false);
    // The email's own dark styles apply in the dark frame, never in the light one.
    expect(await preview("light").evaluate((b) => getComputedStyle(b).backgroundColor)).not.toBe("rgb(0, 0, 0)");
    await page.getByLabel("Dark mode").check();
    expect(await page.locator("iframe.mail.light").isVisible()).toBe(false);
    expect((await page.locator("iframe.mail.dark").boundingBox())!.width).toBeCloseTo(375, 0);
    await expect.poll(() => preview("dark").evaluate((b) => getComputedStyle(b).backgroundColor)).toBe("rgb(0, 0, 0)");
    await shot("template-preview-dark");
    await page.getByLabel("Dark mode").uncheck();

    await page.setViewportSize({ width: 375, height: 800 });
    await page.reload();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.getByLabel("Phone (375 px)").check();
    await expect.poll(() => preview().textContent()).toContain("Hi there!");
    expect(await page.getByLabel("HTML", { exact: true }).isVisible()).toBe(true);
    await shot("template-editor-375");
    await page.setViewportSize({ width: 1280, height: 900 });
  }, 60_000);

  it("sends a test through the send path and restores the first version", async () => {
    await page.goto(url("/templates/welcome"));
    await page.getByLabel("To", { exact: true }).fill("tester@example.test");
    await page.getByRole("button", { name: "Send test" }).click();
    expect(await flash()).toContain("Test email sent to tester@example.test");
    await expect.poll(() => sys.sink!.messages.filter((m) => m.to.includes("tester@example.test")).length, { timeout: 30_000 }).toBe(1);
    expect(sys.sink!.messages.find((m) => m.to.includes("tester@example.test"))!.raw).toContain("Hi");

    await page.getByRole("button", { name: "Restore version 1" }).click();
    expect(await flash()).toContain("Version 1 restored as version 3");
    await expect.poll(() => preview().textContent()).toContain("Welcome, !");
  }, 60_000);
});
