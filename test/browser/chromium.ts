import type { Browser, Page } from "playwright-core";

/** Debian's chromium, driven through playwright-core (suites skip when it is not installed). */
export const CHROMIUM = "/usr/bin/chromium";

/** Headless Chromium without the background traffic (updates, sync, QUIC) a test does not want. */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import("playwright-core");
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/** Signs the console in with an API key through its form; resolves once it left the sign-in page. */
export async function signInWithKey(page: Page, signInUrl: string, key: string): Promise<void> {
  await page.goto(signInUrl);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL((u) => !u.pathname.endsWith("/sign-in"));
}
