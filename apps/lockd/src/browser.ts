import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/** Debian's Chromium (`apt-get install chromium`; .ci/chromium.sh installs it for CI). */
export const CHROMIUM_PATH = "/usr/bin/chromium";

export const hasChromium = (): boolean => existsSync(CHROMIUM_PATH);

/**
 * Headless Chromium for the status page's tests and screenshot. As root it needs --no-sandbox; the
 * other flags stop its own background traffic (updates, sync, safe browsing), which this closed
 * network refuses and which would pollute the record of the page's requests.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
