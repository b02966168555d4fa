import { existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { CHROMIUM, launchChromium, signInWithKey } from "./chromium.js";

/**
 * The pre-send check in the console, in a real browser against the real system: the draft
 * page's check panel (one line per finding and where it is) and scheduling, which shows the
 * errors and asks again before anything is scheduled, then schedules once confirmed.
 */
const KEY = "mr_test_console_check_1";

if (!existsSync(CHROMIUM)) console.log(`test/browser/console-pre-send-check: skipped, ${CHROMIUM} is not installed (apt-get install chromium)`);

describe.skipIf(!existsSync(CHROMIUM))("console: the pre-send check of a broadcast in a browser", () => {
  let sys: TestSystem;
  let browser: Browser;
  let page: Page;
  let links: http.Server;
  let base = "";
  const url = (p: string) => `${sys.gatewayUrl}/console${p}`;

  beforeAll(async () => {
    links = http.createServer((req, res) => res.writeHead(req.url === "/ok" ? 200 : 404).end());
    await new Promise<void>((resolve) => links.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(links.address() as AddressInfo).port}`;
    sys = await useSystem({
      bootstrap: {
        workspaces: [{
          id: "ws_console_check", name: "Check Co", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
          flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
          monthlyLimit: 10_000, sendingAccountNew: false,
          contacts: [{ email: "pat@example.test", firstName: "Pat", subscribed: true }],
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
    await new Promise((resolve) => links?.close(resolve));
  });

  it("lists the findings beside the preview, and asks again before scheduling while errors remain", async () => {
    const created = await sys.api("POST", "/v1/broadcasts", {
      key: KEY,
      body: {
        name: "Check me", subject: "Autumn at Acme", fromEmail: "news@acme.test", fromName: "Acme", audience: { all: true },
        html: `<p>Hi {{firstName}}, the autumn news.</p><p><a href="${base}/gone">The story</a> <a href="${base}/ok">The shop</a></p><p><img src="${base}/banner.png"></p>`,
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.broadcast.id as string;

    await page.goto(url(`/broadcasts/${id}`));
    await page.getByRole("button", { name: "Run the pre-send check" }).click();
    const broken = page.locator('[data-finding="link_broken"]');
    await expect.poll(() => broken.count(), { timeout: 30_000 }).toBe(1);
    expect(await broken.getAttribute("data-level")).toBe("error");
    expect(await broken.locator("[data-where]").textContent()).toBe(`${base}/gone`);
    expect(await page.locator('[data-finding="image_missing_alt"] [data-where]').textContent()).toBe(`${base}/banner.png`);
    expect(await page.locator("[data-check-verdict]").getAttribute("data-check-verdict")).toBe("errors");

    // Scheduling lists the errors and schedules nothing until confirmed.
    await page.getByRole("button", { name: "Schedule" }).click();
    await page.getByRole("heading", { name: /with 1 error\?/ }).waitFor();
    expect(await page.locator('[data-finding="link_broken"] [data-where]').textContent()).toBe(`${base}/gone`);
    expect((await sys.api("GET", `/v1/broadcasts/${id}`, { key: KEY })).body.broadcast.status).toBe("DRAFT");
    await page.getByRole("button", { name: "Schedule anyway" }).click();
    await page.waitForURL((u) => u.pathname.endsWith(`/broadcasts/${id}`));
    expect(await page.locator(".flash").first().textContent()).toContain("Scheduled");
    expect((await sys.api("GET", `/v1/broadcasts/${id}`, { key: KEY })).body.broadcast.status).not.toBe("DRAFT");
  }, 90_000);
});
