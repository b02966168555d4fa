import type { Browser, Page } from "playwright-core";

import { findProgram, missingProgramMessage } from "../harness/programs.js";

/**
 * Debian's chromium, driven through playwright-core. Suites skip when it is not installed, except
 * under CI, where .ci/system-packages installs it and its absence fails the suite by name.
 */
export const CHROMIUM = findProgram("chromium") ?? "/usr/bin/chromium";
if (process.env.CI && !findProgram("chromium")) throw new Error(missingProgramMessage("chromium"));

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
