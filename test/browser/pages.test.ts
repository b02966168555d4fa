import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { connectClient } from "@mailroom/kit/connect.js";
import { ContactService, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { CHROMIUM, launchChromium } from "./chromium.js";

/**
 * The gateway's HTML pages in a real browser (Debian's chromium through playwright-core),
 * against the real system with mail captured locally so /dev/mail is served.
 */
const KEY = "mr_test_browser_key_1";
const WORKSPACE = "ws_browser";
const RECIPIENT = "zoe@example.test";
const SCREENSHOTS = path.join(process.cwd(), ".artifacts", "screenshots");
// A 2×2 blue (#1d4ed8) PNG: an image that needs nothing from the network.
const PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEklEQVR4nGOQ9bsh63eDAUIBACB2BQ13e149AAAAAElFTkSuQmCC";

if (!existsSync(CHROMIUM)) console.log(`test/browser: skipped, ${CHROMIUM} is not installed (apt-get install chromium)`);

describe.skipIf(!existsSync(CHROMIUM))("recipient and development pages in a browser", () => {
  let sys: TestSystem;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let contacts: ReturnType<typeof connectClient<typeof ContactService>>;
  const subject = `Welcome, Zoë ${Date.now()}`;

  const screenshot = async (name: string, p: Page = page) => {
    const file = path.join(SCREENSHOTS, `${name}.png`);
    await p.screenshot({ path: file, fullPage: true });
    console.log(`screenshot: ${file}`);
  };
  const suppressionOf = async () =>
    (await contacts.checkSuppression({ workspaceId: WORKSPACE, emails: [RECIPIENT] })).suppressed[0]?.reason;
  /** Presses Tab until the focused element is the button named `name`. */
  const tabTo = async (name: string) => {
    for (let i = 0; i < 10; i++) {
      await page.keyboard.press("Tab");
      const focused = await page.evaluate(() => document.activeElement?.tagName === "BUTTON" ? document.activeElement.textContent : null);
      if (focused === name) return;
    }
    throw new Error(`Tab never reached the ${name} button`);
  };
  let links: string[] = [];

  beforeAll(async () => {
    await mkdir(SCREENSHOTS, { recursive: true });
    sys = await useSystem({
      bootstrap: {
        workspaces: [{
          id: WORKSPACE, name: "Browser", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
          flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
          monthlyLimit: 1000, sendingAccountNew: false,
        }],
      },
      // No relay: the delivery service captures mail and the gateway serves /dev/mail.
      smtp: false,
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"],
    });
    contacts = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1024, height: 800 } });
    page = await context.newPage();

    // A template, so the system values unsubscribeUrl and manageUrl are merged (raw HTML is sent as is).
    const template = await sys.api("POST", "/v1/templates", {
      key: KEY,
      body: {
        name: "welcome", subject, fromEmail: "team@acme.test",
        html: `<h1>Hello {{firstName}}</h1><p><img src="${PNG}" alt="Acme logo" width="40" height="40"></p>
<p><a href="https://acme.test/start">Get started</a></p>
<p><a href="{{unsubscribeUrl}}">Unsubscribe</a> · <a href="{{manageUrl}}">Manage preferences</a></p>`,
      },
    });
    expect(template.status, JSON.stringify(template.body)).toBe(201);
    const res = await sys.api("POST", "/v1/emails", { key: KEY, body: { template: "welcome", to: RECIPIENT, variables: { firstName: "Zoë" } } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await sys?.stop();
  });

  it("lists the captured message and renders it with its links and image", async () => {
    // Delivery captures the message asynchronously: reload the inbox until it is there.
    for (let i = 0; i < 100; i++) {
      await page.goto(`${sys.gatewayUrl}/dev/mail`);
      if (await page.getByRole("link", { name: subject }).count()) break;
      await page.waitForTimeout(200);
    }
    await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("Captured mail");
    expect(await page.getAttribute("html", "lang")).toBe("en");
    await screenshot("dev-mail-list");

    await page.getByRole("link", { name: subject }).click();
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe(subject);
    const frame = page.frameLocator("iframe");
    expect(await frame.getByRole("heading", { name: "Hello Zoë" }).count()).toBe(1);
    // Click tracking wraps the link: it redirects to the original.
    const tracked = (await frame.getByRole("link", { name: "Get started" }).getAttribute("href"))!;
    expect(tracked.startsWith(`${sys.gatewayUrl}/t/c/`), tracked).toBe(true);
    expect((await fetch(tracked, { redirect: "manual" })).headers.get("location")).toBe("https://acme.test/start");
    // The image decoded: it has its natural size.
    const pixel = await frame.getByRole("img", { name: "Acme logo" }).evaluate((img: HTMLImageElement) => {
      if (!img.complete || !img.naturalWidth) return [];
      const canvas = document.createElement("canvas");
      const ctx = canvas.getContext("2d")!;
      ctx.drawImage(img, 0, 0);
      return [...ctx.getImageData(0, 0, 1, 1).data];
    });
    expect(pixel).toEqual([0x1d, 0x4e, 0xd8, 255]);

    links = await page.locator("h2:text('Links') + ul a").evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).href));
    expect(links).toContain(tracked);
    expect(links.some((l) => /\/u\/[^/?]+$/.test(l)), links.join("\n")).toBe(true);
    expect(links.some((l) => /\/u\/[^/?]+\?manage=1$/.test(l)), links.join("\n")).toBe(true);
    await screenshot("dev-mail-message");
  });

  it("unsubscribes with the keyboard: Tab reaches the button, Enter activates it", async () => {
    const unsubscribeLink = links.find((l) => /\/u\/[^/?]+$/.test(l))!;
    expect(await suppressionOf()).toBeUndefined();
    await page.goto(unsubscribeLink);
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Unsubscribe");
    expect(await page.getByText(RECIPIENT).count()).toBe(1);
    await tabTo("Unsubscribe");
    // The focused button shows where the keyboard is.
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).not.toBe("none");
    await screenshot("unsubscribe-focused");
    await Promise.all([page.waitForURL(unsubscribeLink), page.keyboard.press("Enter")]);
    await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("You are unsubscribed");
    expect(await suppressionOf()).toBe(SuppressionReason.UNSUBSCRIBED);
    await screenshot("unsubscribed");
  });

  it("resubscribes from the manage page", async () => {
    const manageLink = links.find((l) => l.endsWith("?manage=1"))!;
    await page.goto(manageLink);
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Manage your subscription");
    expect(await page.getByText("is unsubscribed").count()).toBe(1);
    await screenshot("manage-unsubscribed");
    await tabTo("Resubscribe");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("You are subscribed again");
    expect(await suppressionOf()).toBeUndefined();

    await page.getByRole("link", { name: "Back to your subscription" }).click();
    expect(await page.getByText("is subscribed").count()).toBe(1);
    expect(await page.getByRole("button", { name: "Unsubscribe" }).count()).toBe(1);
  });

  it("refuses a resubscribe posted from another site", async () => {
    const resubscribe = links.find((l) => /\/u\/[^/?]+$/.test(l))! + "/resubscribe";
    await contacts.addSuppression({ workspaceId: WORKSPACE, email: RECIPIENT, reason: SuppressionReason.UNSUBSCRIBED });
    const res = await fetch(resubscribe, { method: "POST", headers: { origin: "https://evil.test", accept: "text/html" } });
    expect(res.status).toBe(403);
    expect(await suppressionOf()).toBe(SuppressionReason.UNSUBSCRIBED);
    await contacts.removeSuppression({ workspaceId: WORKSPACE, email: RECIPIENT });
  });

  it("fits a 375 px wide screen without horizontal scrolling, with text contrast of at least 4.5:1", async () => {
    const phone = await browser.newPage({ viewport: { width: 375, height: 700 } });
    const inbox = `${sys.gatewayUrl}/dev/mail`;
    await phone.goto(inbox);
    const message = await phone.getByRole("link", { name: subject }).getAttribute("href");
    const pages = {
      "phone-dev-mail-list": inbox,
      "phone-dev-mail-message": new URL(message!, sys.gatewayUrl).toString(),
      "phone-unsubscribe": links.find((l) => /\/u\/[^/?]+$/.test(l))!,
      "phone-manage": links.find((l) => l.endsWith("?manage=1"))!,
      "phone-dev-mail-search": `${inbox}?q=${encodeURIComponent(subject)}`,
      "phone-dev-webhooks": `${sys.gatewayUrl}/dev/webhooks`,
    };
    for (const [name, url] of Object.entries(pages)) {
      await phone.goto(url);
      const { scrollWidth, innerWidth } = await phone.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }));
      expect(scrollWidth, `${name}: ${url}`).toBeLessThanOrEqual(innerWidth);
      expect(await phone.locator('meta[name="viewport"]').count(), name).toBe(1);
      const lowContrast = await phone.evaluate(lowContrastTexts);
      expect(lowContrast, name).toEqual([]);
      await screenshot(name, phone);
    }
    await phone.close();
  });

  it("searches the captured mail by subject or recipient, and clears it with its button", async () => {
    await page.goto(`${sys.gatewayUrl}/dev/mail`);
    await page.getByLabel("Search subject or recipient").fill(RECIPIENT.toUpperCase());
    await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Search" }).click()]);
    expect(new URL(page.url()).searchParams.get("q")).toBe(RECIPIENT.toUpperCase());
    expect(await page.getByRole("link", { name: subject }).count()).toBe(1);
    await page.getByLabel("Search subject or recipient").fill("no such words anywhere");
    await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Search" }).click()]);
    expect(await page.locator("ul.mail li").count()).toBe(0);
    expect(await page.locator(".notice").textContent()).toContain("No captured message has");

    // Clear: the button asks first, then forgets every message.
    await page.goto(`${sys.gatewayUrl}/dev/mail`);
    page.once("dialog", (d) => void d.accept());
    await Promise.all([page.waitForEvent("load"), page.getByRole("button", { name: "Clear captured mail" }).click()]);
    expect(new URL(page.url()).pathname).toBe("/dev/mail");
    expect(await page.locator("ul.mail li").count()).toBe(0);
    expect(await page.locator(".notice").textContent()).toContain("No mail captured yet");
    // A post from another page (no token) clears nothing and is refused.
    expect((await fetch(`${sys.gatewayUrl}/dev/mail/clear`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "_csrf=x" })).status).toBe(403);
  });
});

/** Runs in the page: text elements whose colour against their background is below 4.5:1. */
function lowContrastTexts(): string[] {
  const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number);
  const luminance = ([r, g, b]: number[]) => {
    const ch = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * ch(r) + 0.7152 * ch(g) + 0.0722 * ch(b);
  };
  const background = (el: Element | null): number[] => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const low: string[] = [];
  for (const el of document.querySelectorAll("h1, h2, p, a, button, li, pre, strong, time, div")) {
    if (![...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent!.trim())) continue;
    const fg = luminance(rgb(getComputedStyle(el).color));
    const bg = luminance(background(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    if (ratio < 4.5) low.push(`${el.tagName} "${el.textContent!.trim().slice(0, 30)}": ${ratio.toFixed(2)}`);
  }
  return low;
}
