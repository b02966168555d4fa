import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { CHROMIUM, launchChromium, signInWithKey } from "./chromium.js";

/**
 * The console's email page with what an email carries (issue 28): in a real browser (Debian's
 * chromium through playwright-core) against the real system, an email sent through the API
 * with attachments and tags shows them (names, sizes, tags), and the download link gives the
 * file byte for byte; another workspace's session gets a 404 for it. Screenshot in
 * test-results/console/.
 */
const KEY = "mr_test_console_attach_1";
const OTHER_KEY = "mr_test_console_attach_other_1";
const SHOTS = path.join(process.cwd(), "test-results", "console");

if (!existsSync(CHROMIUM)) console.log(`test/browser/console-email-attachments: skipped, ${CHROMIUM} is not installed (apt-get install chromium)`);

const workspace = (id: string, key: string) => ({
  id, name: id, timezone: "UTC",
  apiKeys: [{ key, scopes: ["api_user"] }],
  verifiedEmails: [], verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
  flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
  monthlyLimit: 10_000, sendingAccountNew: false,
});

describe.skipIf(!existsSync(CHROMIUM))("console: an email's attachments and tags in a browser", () => {
  let sys: TestSystem;
  let browser: Browser;
  let page: Page;
  const url = (p: string) => `${sys.gatewayUrl}/console${p}`;
  const report = randomBytes(300 * 1024);
  let emailId = "";

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    sys = await useSystem({
      bootstrap: { workspaces: [workspace("ws_attach", KEY), workspace("ws_attach_other", OTHER_KEY)] },
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"],
    });
    const res = await sys.api("POST", "/v1/emails", {
      key: KEY,
      body: {
        from: "Acme <reports@acme.test>", to: "ann@example.test", subject: "Monthly report", html: "<p>Your report is attached.</p>",
        attachments: [{ filename: "Q3 report (final).pdf", content: report.toString("base64"), contentType: "application/pdf" }],
        tags: [{ name: "category", value: "reports" }],
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    emailId = res.body.email.id;
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1100, height: 900 }, acceptDownloads: true })).newPage();
    await signInWithKey(page, url("/sign-in"), KEY);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await sys?.stop();
  });

  it("shows the attachment (name, size) and the tag, and downloads the file byte for byte", async () => {
    await page.goto(url(`/emails/${emailId}`));
    const table = page.locator("#attachments");
    await expect(table.getByRole("link", { name: "Q3 report (final).pdf" }).count()).resolves.toBe(1);
    expect(await table.textContent()).toContain("application/pdf");
    expect(await table.textContent()).toContain("300 KB");
    expect(await page.locator("#tags").textContent()).toContain("category: reports");
    await page.screenshot({ path: path.join(SHOTS, "email-attachments.png"), fullPage: true });

    const [download] = await Promise.all([page.waitForEvent("download"), table.getByRole("link", { name: "Q3 report (final).pdf" }).click()]);
    expect(download.suggestedFilename()).toBe("Q3 report (final).pdf");
    const saved = await download.path();
    expect((await readFile(saved!)).equals(report)).toBe(true);
  }, 60_000);

  it("filters the email list by tag", async () => {
    await page.goto(url("/emails"));
    await page.getByLabel("Tag").fill("category:reports");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL((u) => u.searchParams.get("tag") === "category:reports");
    expect(await page.locator("#emails tbody tr").count()).toBe(1);
    const row = await page.locator("#emails tbody tr").textContent();
    expect(row).toContain("category: reports");
    expect(row).toContain("1 attachment");
    await page.goto(url("/emails?tag=category:other"));
    expect(await page.textContent("body")).toContain("No email matches these filters.");
    const bad = await page.goto(url("/emails?tag=nocolon"));
    expect(bad?.status()).toBe(400);
  }, 60_000);

  it("answers another workspace's session, an unknown index and a malformed one with a 404, and no session with the sign-in page", async () => {
    const other = await browser.newContext();
    const otherPage = await other.newPage();
    await signInWithKey(otherPage, url("/sign-in"), OTHER_KEY);
    const foreign = await other.request.get(url(`/emails/${emailId}/attachments/0`));
    expect(foreign.status()).toBe(404);
    expect((await foreign.body()).includes(report.subarray(0, 64))).toBe(false);
    await other.close();

    for (const p of [`/emails/${emailId}/attachments/1`, `/emails/${emailId}/attachments/x`, "/emails/trs_nope/attachments/0"]) {
      expect((await page.request.get(url(p))).status(), p).toBe(404);
    }
    const anonymous = await browser.newContext();
    const res = await anonymous.request.get(url(`/emails/${emailId}/attachments/0`), { maxRedirects: 0 });
    expect(res.status()).toBeGreaterThanOrEqual(300);
    expect(res.status()).toBeLessThan(400);
    await anonymous.close();
  }, 60_000);
});
