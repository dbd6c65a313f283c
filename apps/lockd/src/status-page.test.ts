import { LockdCluster } from "@lock/testkit";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_PATH, hasChromium, launchChromium } from "./browser.js";

/**
 * The live status page in a real headless Chromium, served by a real 3-node cluster: it loads
 * only from the lockd admin origin, shows each node's role, asks for the admin token, follows a
 * failover (kill -9 of the active) by itself, and says so when its own node stops answering.
 */
const ADMIN_TOKEN = "admin-token-of-24-chars!";
const available = hasChromium();
if (!available)
  console.warn(`status page browser tests skipped: ${CHROMIUM_PATH} is absent (apt-get install -y chromium)`);

describe.skipIf(!available)(`status page in Chromium (${CHROMIUM_PATH})`, () => {
  let browser: Browser;
  const clusters: LockdCluster[] = [];
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    for (const cluster of clusters.splice(0)) await cluster.dispose();
  });

  async function startCluster(): Promise<LockdCluster> {
    const cluster = await LockdCluster.start({
      nodes: 3,
      args: ["--admin", "127.0.0.1:0"],
      env: { LOCKD_ADMIN_TOKEN: ADMIN_TOKEN },
    });
    clusters.push(cluster);
    await cluster.nodes[0]!.waitForServing({ since: 0 });
    await Promise.all(
      cluster.nodes.slice(1).map((node) => node.waitForFollowing(cluster.advertised(0), { since: 0 })),
    );
    return cluster;
  }

  /** Resolves once the nodes table shows `address` in `state` (active, standby, down). */
  function nodeShown(page: Page, address: string, state: string): Promise<unknown> {
    return page.waitForSelector(`#nodes tr[data-node="${address}"][data-state="${state}"]`, {
      timeout: 20_000,
    });
  }

  it("loads only from lockd, asks for the admin token, shows the roles and follows a failover", async () => {
    const cluster = await startCluster();
    const origin = `http://127.0.0.1:${cluster.nodes[1]!.adminPort}`;
    const context = await browser.newContext();
    const requested: string[] = [];
    context.on("request", (request) => requested.push(request.url()));
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    page.on("console", (message) => {
      // The first poll, before the token is entered, is refused: Chromium logs that 401, as expected.
      if (message.type() === "error" && !message.text().includes("status of 401"))
        errors.push(message.text());
    });
    try {
      await page.goto(`${origin}/`);
      // The admin token is asked once, then kept for this tab.
      await page.waitForSelector("#login:not([hidden])");
      await page.fill("#token", ADMIN_TOKEN);
      await page.click("#login-form button");

      await nodeShown(page, cluster.advertised(0), "active");
      await nodeShown(page, cluster.advertised(1), "standby");
      await nodeShown(page, cluster.advertised(2), "standby");
      const states = await page.$$eval("#nodes tbody tr", (rows) =>
        rows.map((row) => [row.getAttribute("data-node"), row.querySelector("td.state")?.textContent]),
      );
      expect(states).toEqual([
        [cluster.advertised(0), "ACTIVE"],
        [cluster.advertised(1), "STANDBY"],
        [cluster.advertised(2), "STANDBY"],
      ]);
      expect(await page.textContent("#self-role")).toBe("STANDBY");
      expect(await page.evaluate('sessionStorage.getItem("lockd-admin-token")')).toBe(ADMIN_TOKEN);

      // kill -9 of the active: node 1 (this page's node) takes over, node 0 shows as down.
      await cluster.nodes[0]!.kill("SIGKILL");
      await nodeShown(page, cluster.advertised(0), "down");
      await nodeShown(page, cluster.advertised(1), "active");
      await page.waitForSelector("#self-role.active", { timeout: 20_000 });
      expect(await page.textContent(`#nodes tr[data-node="${cluster.advertised(0)}"] td.state`)).toBe("DOWN");
      await page.waitForSelector("#changes li:has-text('became ACTIVE')", { timeout: 20_000 });
      // Legible, not raw JSON.
      expect(await page.textContent("body")).not.toMatch(/[{}"]\s*"?[a-zA-Z]+"?\s*:/);

      // A reload keeps the token (sessionStorage) and the history (kept by lockd).
      await page.reload();
      await nodeShown(page, cluster.advertised(1), "active");
      expect(await page.isHidden("#login")).toBe(true);

      // No script error or refused request while its node lived (the polls after its death fail).
      expect(errors).toEqual([]);
      // The page's own node dies: the banner says so, and the last data stays.
      await cluster.nodes[1]!.kill("SIGKILL");
      await page.waitForSelector('#freshness[data-stale="true"]', { timeout: 20_000 });
      expect(await page.textContent("#freshness")).toMatch(/^NO ANSWER from this node for /);
      expect(await page.textContent("#self-role")).toBe("ACTIVE");
    } finally {
      await context.close();
    }
    expect(errors.filter((error) => !error.includes("ERR_CONNECTION_REFUSED"))).toEqual([]);
    expect(requested.length).toBeGreaterThan(3);
    for (const url of requested) expect(url.startsWith(`${origin}/`), url).toBe(true);
    // A browser, a cluster and a failover: more than the default 20 s on a busy machine.
  }, 90_000);
});
