import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { CHROMIUM, launchChromium, signInWithKey } from "./chromium.js";

/**
 * The console's automation pages in a real browser (Debian's chromium through playwright-core)
 * against the real system (every unit a process, the automation unit included, nats-server,
 * an SMTP sink): an automation built step by step in the form (a type changed in place, a
 * condition with a nested branch), refused once by the unit with the step's path shown in the
 * step, created, activated and listed; then a contact created through the API enters it, the
 * flow's counts move without a reload, and the contact's page lists the run with its steps.
 * Screenshots go to test-results/console/.
 */
const KEY = "mr_test_console_automations_1";
const SHOTS = path.join(process.cwd(), "test-results", "console");

if (!existsSync(CHROMIUM)) console.log(`test/browser/console-automations: skipped, ${CHROMIUM} is not installed (apt-get install chromium)`);

describe.skipIf(!existsSync(CHROMIUM))("console: automations in a browser", () => {
  let sys: TestSystem;
  let browser: Browser;
  let page: Page;
  let automationId = "";

  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  const url = (p: string) => `${sys.gatewayUrl}/console${p}`;
  const flash = () => page.locator(".flash").first().textContent();
  const field = (name: string) => page.locator(`[name="${name}"]`);
  const expectLabelled = async () => {
    const unlabelled = await page.evaluate(() =>
      [...document.querySelectorAll<HTMLInputElement>("input:not([type=hidden]), select, textarea")]
        .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute("aria-label") && !el.getAttribute("aria-labelledby"))
        .map((el) => el.outerHTML.slice(0, 100)));
    expect(unlabelled).toEqual([]);
  };

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    sys = await useSystem({
      bootstrap: {
        workspaces: [{
          id: "ws_automations", name: "Automation Co", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
          flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
          monthlyLimit: 10_000, sendingAccountNew: false,
          contactProperties: [{ slug: "plan", type: "string" }],
          templates: [
            { name: "welcome", subject: "Welcome {{firstName}}", html: "<p>Hello {{firstName}}</p>", fromEmail: "hello@acme.test", fromName: "Acme" },
            { name: "pro", subject: "Pro tips", html: "<p>Tips</p>", fromEmail: "hello@acme.test", fromName: "Acme" },
          ],
          contacts: [],
        }],
      },
    });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
    page.on("dialog", (d) => void d.accept());
    await signInWithKey(page, url("/sign-in"), KEY);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await sys?.stop();
  });

  it("builds an automation in the form, shows the unit's refusal in the step it names, creates, activates and lists it", async () => {
    await page.getByRole("link", { name: "Automations", exact: true }).click();
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Automations");
    await page.getByRole("link", { name: "New automation" }).click();
    await page.getByLabel("Name", { exact: true }).fill("Welcome series");
    expect(await page.getByLabel("When", { exact: true }).inputValue()).toBe("contact_created");

    // 1: send (a template that does not exist, for now).
    await page.getByRole("button", { name: "Add a step at the end" }).click();
    await field("steps.0.template").fill("welcom");
    // 2: added as a send, turned into a wait: the form comes back with the wait's field.
    await page.getByRole("button", { name: "Add a step at the end" }).click();
    await field("steps.1.type").selectOption("wait");
    await field("steps.1.duration").fill("1 hour");
    expect(await field("steps.1.id").inputValue()).toBe("wait_1");
    // 3: a condition with a send in its then branch.
    await page.getByRole("combobox", { name: "Add a step at the end" }).selectOption("condition");
    await page.getByRole("button", { name: "Add a step at the end" }).click();
    await field("steps.2.filter").fill('{"properties.plan": "pro"}');
    await page.getByRole("button", { name: "Add a step to the then branch of step 3" }).click();
    await field("steps.2.then.0.template").fill("pro");
    // What was typed survived every round trip.
    expect(await field("steps.0.template").inputValue()).toBe("welcom");
    expect(await field("steps.1.duration").inputValue()).toBe("1 hour");
    expect(await page.getByLabel("Name", { exact: true }).inputValue()).toBe("Welcome series");
    await expectLabelled();

    await page.getByRole("button", { name: "Create automation" }).click();
    const alert = page.locator("#form-error");
    await expect.poll(() => alert.textContent()).toContain("steps[0].template");
    expect(await alert.textContent()).toContain("welcom");
    expect(await page.locator('fieldset.has-error[id="edit-steps.0"] .step-error').textContent()).toContain("steps[0].template");
    await shot("automations-refused");

    await field("steps.0.template").fill("welcome");
    await page.getByRole("button", { name: "Create automation" }).click();
    await page.waitForURL(/\/console\/automations\/aut_[^/]+$/);
    expect(await flash()).toContain("Welcome series created as a draft");
    automationId = /\/automations\/(aut_[^/]+)$/.exec(new URL(page.url()).pathname)![1];
    expect(await page.locator("[data-status]").first().textContent()).toBe("Draft");

    // The flow: the steps in words, the send nested in the condition's then branch.
    const flow = page.locator("div.flow").first();
    for (const words of ["When a contact is created", "Send template welcome", "Wait 1 hour", "If plan is pro"]) {
      expect(await flow.textContent()).toContain(words);
    }
    expect(await page.locator('[data-step="condition_1"] [data-branch="then"] [data-step="send_2"] .step-words').textContent()).toBe("Send template pro");
    expect(await page.locator('[data-step="condition_1"] [data-branch="else"]').textContent()).toContain("continues below");

    await page.getByRole("button", { name: "Activate" }).click();
    expect(await flash()).toContain("is active");
    expect(await page.locator("[data-status]").first().textContent()).toBe("Active");
    await shot("automations-flow");

    await page.getByRole("link", { name: "Automations", exact: true }).click();
    const row = page.locator(`tr[data-automation="${automationId}"]`);
    expect(await row.locator("[data-status]").textContent()).toBe("Active");
    expect(await row.locator('td[data-label="Version"]').textContent()).toBe("1");
    expect(await row.textContent()).toContain("Welcome series");
    await expectLabelled();
    await shot("automations-list");
  });

  it("counts a new contact's run on the flow without a reload, and lists the run on the contact's page", async () => {
    expect(automationId).not.toBe("");
    await page.goto(url(`/automations/${automationId}`));
    const count = (step: string, key: string) => page.locator(`[data-stats="${step}"] [data-count="${key}"]`).textContent();
    expect(await count("send_1", "entered")).toBe("0");
    await page.evaluate(() => { (window as unknown as { stayed: boolean }).stayed = true; });

    const created = await sys.api("POST", "/v1/contacts", { key: KEY, body: { properties: { email: "ann@example.test", firstName: "Ann", status: "SUBSCRIBED", plan: "pro" } } });
    expect(created.status, JSON.stringify(created.body)).toBeLessThan(300);
    const contactId: string = created.body.contact.id;

    await expect.poll(() => count("send_1", "entered"), { timeout: 30_000 }).toBe("1");
    await expect.poll(() => count("wait_1", "waiting"), { timeout: 30_000 }).toBe("1");
    expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).toBe(true);
    await expect.poll(() => page.locator('[data-runs="active"]').textContent(), { timeout: 10_000 }).toBe("1");
    await shot("automations-flow-live");

    await page.goto(url(`/contacts/${contactId}`));
    const section = page.locator("section", { has: page.getByRole("heading", { name: "Automations" }) });
    const run = section.locator("[data-automation-run]").first();
    await expect.poll(() => run.textContent()).toContain("Welcome series");
    expect(await run.locator("[data-run-status]").textContent()).toBe("active");
    const send = run.locator('tr[data-step="send_1"]');
    expect(await send.locator('td[data-label="Entered"] time').count()).toBe(1);
    expect(await send.locator('td[data-label="Completed"] time').count()).toBe(1);
    const email = send.locator('a[href^="/console/emails/"]');
    expect(await email.count()).toBe(1);
    expect(await run.locator('tr[data-step="wait_1"] td[data-label="Completed"]').textContent()).toBe("in progress");
    await shot("automations-contact");
    await email.click();
    expect(new URL(page.url()).pathname).toMatch(/^\/console\/emails\//);
    expect(await page.getByRole("heading", { level: 1 }).count()).toBe(1);
  });

  it("after a new version, still counts the run waiting on the version it started on; each version selectable", async () => {
    const patched = await sys.api("PATCH", `/v1/automations/${automationId}`, { key: KEY, body: { reentry: { after: "P30D" } } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.automation.version).toBe(2);
    await page.goto(url(`/automations/${automationId}`));
    const count = (step: string, key: string) => page.locator(`[data-stats="${step}"] [data-count="${key}"]`).textContent();
    // Every version (the default): Ann's run of version 1 still waits in wait_1.
    expect(await page.getByLabel("Counts of").inputValue()).toBe("all");
    expect(await count("wait_1", "waiting")).toBe("1");
    expect(await count("send_1", "entered")).toBe("1");
    // Version 2 alone: nobody entered it yet.
    await page.getByLabel("Counts of").selectOption("2");
    await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Show" }).click()]);
    expect(new URL(page.url()).searchParams.get("version")).toBe("2");
    expect(await count("wait_1", "waiting")).toBe("0");
    await page.getByLabel("Counts of").selectOption("1");
    await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Show" }).click()]);
    expect(await count("wait_1", "waiting")).toBe("1");
    // The API answers the same per version.
    const v1 = await sys.api("GET", `/v1/automations/${automationId}/stats?version=1`, { key: KEY });
    expect(v1.body.stats.steps.find((st: { stepId: string }) => st.stepId === "wait_1").waiting).toBe(1);
    await shot("automations-flow-versions");
  });
});
