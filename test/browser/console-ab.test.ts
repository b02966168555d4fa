import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { CHROMIUM, launchChromium, signInWithKey } from "./chromium.js";

/**
 * A broadcast's A/B test in the console, in a real browser against the real system: the
 * draft form's variants, test share, metric and wait (a refusal naming the field, the form
 * kept as typed), then the progress page's variants side by side (SVG bars and a table) and
 * "send variant B now", which sends B to the rest of the audience. Screenshots go to
 * test-results/console/.
 */
const KEY = "mr_test_console_ab_1";
const AUDIENCE = 40;
const SHOTS = path.join(process.cwd(), "test-results", "console");

if (!existsSync(CHROMIUM)) console.log(`test/browser/console-ab: skipped, ${CHROMIUM} is not installed (apt-get install chromium)`);

describe.skipIf(!existsSync(CHROMIUM))("console: a broadcast's A/B test in a browser", () => {
  let sys: TestSystem;
  let browser: Browser;
  let page: Page;
  const url = (p: string) => `${sys.gatewayUrl}/console${p}`;
  const flash = () => page.locator(".flash").first().textContent();
  const received = () => sys.sink!.messages.filter((m) => m.raw.includes("#abconsole") && !m.raw.includes("[TEST "));
  const testCopies = () => sys.sink!.messages.filter((m) => m.raw.includes("#abconsole") && m.raw.includes("[TEST "));

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    sys = await useSystem({
      bootstrap: {
        workspaces: [{
          id: "ws_console_ab", name: "AB Co", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
          flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
          monthlyLimit: 10_000, sendingAccountNew: false,
          contacts: Array.from({ length: AUDIENCE }, (_, i) => ({ email: `p${i}@example.test`, firstName: `P${i}`, subscribed: true })),
        }],
      },
    });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
    page.on("dialog", (d) => void d.accept());
    await signInWithKey(page, url("/sign-in"), KEY);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await sys?.stop();
  });

  it("creates a draft with two variants, sends it, shows them side by side, and sends the chosen one to the rest", async () => {
    await page.goto(url("/broadcasts/new"));
    await page.getByLabel("Name (only you see it)").fill("AB news");
    await page.getByLabel("Subject", { exact: true }).fill("Base {{firstName}} #abconsole");
    await page.getByLabel("From name").first().fill("Acme");
    await page.getByLabel("From address").fill("news@acme.test");
    await page.getByLabel("HTML", { exact: true }).fill("<p>Hi {{firstName}}</p>");
    await page.locator("#ab-test > summary").click();
    await page.getByLabel("Variant A subject").fill("Alpha {{firstName}} #abconsole");
    // Variants typed with the test off are not dropped silently.
    await page.getByRole("button", { name: "Save draft" }).click();
    expect(await flash()).toContain("switched off");
    if ((await page.locator("#ab-test").getAttribute("open")) === null) await page.locator("#ab-test > summary").click();
    await page.getByLabel("Test variants on part of the audience first").check();
    await page.getByLabel("Test share (% of the audience, 5–50)").fill("50");
    await page.getByLabel("Winner by").selectOption("opens");
    await page.getByLabel("Wait before choosing (5 minutes to 7 days)").fill("1");
    await page.getByLabel("Unit").selectOption("hours");
    await page.getByRole("button", { name: "Save draft" }).click();
    // One variant: refused by the broadcast service, naming the field; the form comes back as typed.
    expect(await flash()).toContain("abTest.variants");
    expect(await page.getByLabel("Variant A subject").inputValue()).toBe("Alpha {{firstName}} #abconsole");
    await page.getByLabel("Variant B subject").fill("Beta {{firstName}} #abconsole");
    await page.getByLabel("Variant B sender name").fill("Beta Team");
    await page.getByRole("button", { name: "Save draft" }).click();
    expect(await flash()).toContain("Draft saved");
    const broadcastUrl = page.url().replace(/[?#].*$/, "");
    // The saved draft shows its test (open, with its values).
    expect(await page.locator("#ab-test").getAttribute("open")).not.toBeNull();
    expect(await page.getByLabel("Variant A subject").inputValue()).toBe("Alpha {{firstName}} #abconsole");
    expect(await page.getByLabel("Wait before choosing (5 minutes to 7 days)").inputValue()).toBe("1");

    // The preview shows every variant as its share receives it, not the base fields alone.
    expect(await page.locator("[data-preview-variant]").count()).toBe(2);
    expect(await page.locator("[data-preview-variant] [data-preview-subject]").allTextContents()).toEqual(["Alpha [firstName] #abconsole", "Beta [firstName] #abconsole"]);
    // A test send gives the member every variant, each marked.
    await page.getByLabel("owner@acme.test").check();
    await page.getByRole("button", { name: "Send test" }).click();
    expect(await flash()).toContain("each gets all 2 variants");
    await expect.poll(() => testCopies().length, { timeout: 30_000 }).toBe(2);
    const subjects = testCopies().map((m) => /^Subject: (.*)$/m.exec(m.raw)?.[1] ?? "").sort();
    expect(subjects[0]).toMatch(/^\[TEST A\] Alpha\b/);
    expect(subjects[1]).toMatch(/^\[TEST B\] Beta\b/);
    expect(testCopies().find((m) => m.raw.includes("[TEST B]"))!.raw).toMatch(/^From: "?Beta Team"? </m);
    await page.goto(page.url().replace(/[?#].*$/, ""));

    await page.getByLabel("As soon as possible (ASAP)").check();
    await page.getByRole("button", { name: "Schedule" }).click();
    expect(await flash()).toContain("Scheduled (ASAP)");

    // The test share goes out; the page shows both variants waiting for a winner.
    await expect.poll(async () => (await page.goto(broadcastUrl), page.locator("[data-ab-state]").getAttribute("data-ab-state")), { timeout: 60_000, interval: 1_000 }).toBe("waiting");
    const id = broadcastUrl.split("/").pop()!;
    const { body } = await sys.api("GET", `/v1/broadcasts/${id}`, { key: KEY });
    const testShare = body.broadcast.abTest.variants[0].recipients + body.broadcast.abTest.variants[1].recipients;
    expect(testShare).toBeGreaterThan(0);
    await expect.poll(() => received().length, { timeout: 30_000 }).toBe(testShare);
    expect(await page.locator("[data-ab-chart] rect").count()).toBe(4); // open and click bars for A and B
    expect(await page.locator("#ab tbody tr").count()).toBe(2);
    expect(await page.locator("#ab tbody tr").nth(1).textContent()).toContain("Beta Team");
    await page.screenshot({ path: path.join(SHOTS, "broadcast-ab-waiting.png"), fullPage: true });

    // At 375 px: no sideways scrolling, the choose buttons on screen, the chart's text readable (>= 11 px drawn).
    await page.setViewportSize({ width: 375, height: 800 });
    await page.goto(broadcastUrl);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
    for (const name of ["Send variant A now", "Send variant B now"]) {
      const box = (await page.getByRole("button", { name }).boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(375);
    }
    const textHeights = await page.locator("[data-ab-chart] text").evaluateAll((els) => els.map((e) => e.getBoundingClientRect().height));
    expect(textHeights.length).toBe(6);
    expect(Math.min(...textHeights)).toBeGreaterThanOrEqual(11);
    await page.screenshot({ path: path.join(SHOTS, "broadcast-ab-waiting-375.png"), fullPage: true });
    await page.setViewportSize({ width: 1100, height: 900 });
    await page.goto(broadcastUrl);

    await page.getByRole("button", { name: "Send variant B now" }).click();
    expect(await flash()).toContain("Variant B goes to the rest");
    expect(await page.locator("[data-ab-winner]").getAttribute("data-ab-winner")).toBe("1");
    await expect.poll(() => received().length, { timeout: 60_000 }).toBe(AUDIENCE);
    const rest = received().slice(testShare);
    expect(rest.every((m) => m.raw.includes("Beta P"))).toBe(true);
    await expect.poll(() => page.locator("[data-status]").textContent(), { timeout: 60_000, interval: 500 }).toBe("Completed");
    await page.goto(broadcastUrl);
    expect(await page.locator("[data-ab-choose]").count()).toBe(0);
    expect(await page.locator("#ab").textContent()).toContain("chosen by a user");
    await page.screenshot({ path: path.join(SHOTS, "broadcast-ab-decided.png"), fullPage: true });
  }, 180_000);
});
