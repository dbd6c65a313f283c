import { keySlot } from "@lock/protocol";
import { grantToken } from "@lock/testkit";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_PATH, hasChromium, launchChromium } from "./browser.js";
import { slotClusters } from "./slot-clusters.test.support.js";

/**
 * The status page's "Slots" panel (issue 24) in a real headless Chromium, on real lockd processes
 * over a real etcd: east and west share the key space by halves; a slot moves from east to west
 * while a lock in it is held, so the page shows the move in progress, then its commit.
 */
const available = hasChromium();
/** `{bar}:…` keys hash to this slot: east's until it moves (docs/protocol.md, "Key slots"). */
const SLOT = 5061;
const KEY = "{bar}:status-page";

describe.skipIf(!available)(`status page's slots panel in Chromium (${CHROMIUM_PATH})`, () => {
  const harness = slotClusters();
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** The cluster rows as the page shows them: name, slots, share, ranges. */
  const rows = (page: Page) =>
    page.$$eval("#slot-clusters tbody tr", (trs) =>
      trs.map((tr) => ({
        cluster: tr.getAttribute("data-cluster"),
        self: tr.classList.contains("self"),
        slots: tr.querySelector("td.slots")?.textContent,
        share: tr.querySelector("td.share")?.textContent,
        ranges: tr.querySelector("td.ranges")?.textContent,
      })),
    );
  /** Resolves once the page shows `cluster` serving `slots` slots. */
  const serving = (page: Page, cluster: string, slots: number) =>
    page.waitForSelector(`#slot-clusters tr[data-cluster="${cluster}"][data-slots="${slots}"]`, {
      timeout: 15_000,
    });

  it("shows the clusters and their slots, then a move in progress, then its commit; a map not read yet", async () => {
    expect(keySlot(KEY)).toBe(SLOT);
    const { east, west, eastProbe, address } = await harness.halves(["--admin", "127.0.0.1:0"]);
    const admin = (cluster: typeof east) => `http://127.0.0.1:${cluster.nodes[0]!.adminPort}`;
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    harness.defer(() => page.close());
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text());
    });
    await page.goto(`${admin(east)}/`);

    await serving(page, "east", 8192);
    await serving(page, "west", 8192);
    expect(await rows(page)).toEqual([
      { cluster: "east", self: true, slots: "8,192", share: "50%", ranges: "0-8191" },
      { cluster: "west", self: false, slots: "8,192", share: "50%", ranges: "8192-16383" },
    ]);
    expect(await page.textContent("#slots-cluster")).toBe("east");
    const { map } = (await (await fetch(`${admin(east)}/slots`)).json()) as { map: { version: string } };
    const version = map.version;
    expect(await page.textContent("#slots-version")).toBe(`· map version ${version}`);
    expect(await page.textContent(`#slot-clusters tr[data-cluster="west"] .address`)).toBe(address(west));
    expect(await page.isVisible("#slot-moves-none")).toBe(true);
    // A coordinated cluster's epochs are the store counter's numbers, not a node and a round.
    expect(await page.textContent("#epoch .epoch-readable")).toMatch(/^store epoch [1-9]\d*$/);
    expect(await page.getAttribute("#slots-bar", "aria-label")).toBe(
      "slots 0-16383 by cluster: east 0-8191; west 8192-16383",
    );

    // A lock held in the slot, with a long lease: the move stays in progress until it is released.
    const held = await eastProbe.request(`A ${KEY} 600 0`);
    expect(held).toMatch(/^A /);
    const begun = await fetch(`${admin(west)}/slots/moves`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ from: SLOT, to: SLOT, target: "west" }),
    });
    expect(begun.status).toBe(202);
    await page.waitForSelector(`#slot-moves li[data-move="${SLOT}-${SLOT}"]`, { timeout: 15_000 });
    expect(await page.textContent("#slot-moves")).toBe(`${SLOT}: east → west`);
    expect(await page.isHidden("#slot-moves-none")).toBe(true);
    // Still the source's until it commits: east keeps its 8192 slots, the moving one marked.
    expect((await rows(page))[0]).toMatchObject({
      slots: "8,192",
      ranges: `0-${SLOT - 1}, ${SLOT} (→ west), ${SLOT + 1}-8191`,
    });
    expect(await page.$$eval("#slots-bar .segment.moving", (parts) => parts.length)).toBe(1);
    expect(await page.getAttribute("#slots-bar", "aria-label")).toContain(`${SLOT} moving east → west`);

    // The holder releases: east commits the move, and the page follows.
    expect(await eastProbe.request(`R ${KEY} ${grantToken(held)}`)).toMatch(/^R /);
    await serving(page, "west", 8193);
    expect(await rows(page)).toEqual([
      {
        cluster: "east",
        self: true,
        slots: "8,191",
        share: "49.99%",
        ranges: `0-${SLOT - 1}, ${SLOT + 1}-8191`,
      },
      { cluster: "west", self: false, slots: "8,193", share: "50.01%", ranges: `${SLOT}, 8192-16383` },
    ]);
    expect(await page.isVisible("#slot-moves-none")).toBe(true);
    expect(await page.$$eval("#slots-bar .segment.moving", (parts) => parts.length)).toBe(0);

    // A phone's width: the panel stacks, nothing is wider than the screen.
    await page.setViewportSize({ width: 420, height: 900 });
    expect(
      await page.evaluate("document.documentElement.scrollWidth - window.innerWidth"),
    ).toBeLessThanOrEqual(0);

    // A node that has not read the map yet (the store not answering since it started) says so.
    await page.route(/\/status$/, async (route) => {
      const response = await route.fetch();
      const status = (await response.json()) as { slots: { map: unknown } };
      await route.fulfill({ response, json: { ...status, slots: { ...status.slots, map: null } } });
    });
    await page.waitForSelector("#slots-unread:not([hidden])", { timeout: 5_000 });
    expect(await page.isHidden("#slots-map")).toBe(true);
    expect(await page.textContent("#slots-unread")).toBe("slot map not read yet");
    expect(await page.textContent("#slots-cluster")).toBe("east");
    expect(await page.textContent("#slots-version")).toBe("");
    expect(errors).toEqual([]);
  }, 60_000);
});
