import { keySlot, SlotMap } from "@lock/protocol";
import { describe, expect, it, vi } from "vitest";
import { MemoryCoordinationStore } from "../coordination/memory-store.js";
import { monotonicClock } from "../engine/clock.js";
import { client, serve } from "../net/serve.test.data.js";
import { SlotGate } from "./slot-gate.js";
import { followSlotMap, SLOT_MAP_DOCUMENT } from "./slot-map-follower.js";

const clusters = new Map([
  ["east", ["127.0.0.1:7001"]],
  ["west", ["127.0.0.1:7101", "127.0.0.1:7102"]],
]);
const halves = (version: bigint) =>
  SlotMap.of(version, clusters, [
    { from: 0, to: 8191, cluster: "east" },
    { from: 8192, to: 16383, cluster: "west" },
  ]);
/** A key of each half (keySlot("foo") is 12182, keySlot("bar") 5061). */
const EAST_KEY = "bar";
const WEST_KEY = "foo";

describe("a node of one of several clusters (a slot map)", () => {
  it("serves its own slots, answers S for the other cluster's with its active, and K with the map", async () => {
    const gate = new SlotGate("east", {
      activeOf: (cluster) => (cluster === "west" ? "127.0.0.1:7102" : undefined),
    });
    expect(gate.update(halves(4n))).toBe(true);
    const c = await client(await serve({ slots: gate }));
    expect(keySlot(EAST_KEY)).toBeLessThan(8192);
    expect(await c.request(`A ${EAST_KEY} 30 0 r1`)).toMatch(new RegExp(`^A ${EAST_KEY} \\d+ r1$`));
    expect(await c.request(`A ${WEST_KEY} 30 0 r2`)).toBe(`S A ${WEST_KEY} 12182 4 west 127.0.0.1:7102 r2`);
    // Every keyed verb, with or without an id; nothing of it runs here.
    expect(await c.request(`Y ${WEST_KEY} 30`)).toBe(`S Y ${WEST_KEY} 12182 4 west 127.0.0.1:7102`);
    expect(await c.request(`Q ${WEST_KEY} p5 30 0 r3`)).toBe(
      `S Q ${WEST_KEY} 12182 4 west 127.0.0.1:7102 r3`,
    );
    expect(await c.request(`R ${WEST_KEY} 7`)).toBe(`S R ${WEST_KEY} 12182 4 west 127.0.0.1:7102`);
    expect(await c.request(`C ${WEST_KEY} r2`)).toBe(`S C ${WEST_KEY} 12182 4 west 127.0.0.1:7102 r2`);
    // A tag decides the slot: {bar}:anything is east's.
    expect(await c.request(`Y {${EAST_KEY}}:x 30`)).toMatch(/^Y \{bar\}:x \d+$/);
    expect(await c.request("K")).toBe(
      "K 4 east=127.0.0.1:7001 west=127.0.0.1:7101,127.0.0.1:7102 0-8191:east 8192-16383:west",
    );
    expect(await c.request("I")).toMatch(/^I version=/);
  });

  it("names another cluster's first address when it does not know its active", async () => {
    const gate = new SlotGate("east");
    gate.update(halves(1n));
    const c = await client(await serve({ slots: gate }));
    expect(await c.request(`A ${WEST_KEY} 30 0`)).toBe(`S A ${WEST_KEY} 12182 1 west 127.0.0.1:7101`);
  });

  it("without a map serves every key and answers K 0", async () => {
    const c = await client(await serve({ slots: new SlotGate("east") }));
    expect(await c.request(`A ${WEST_KEY} 30 0`)).toMatch(/^A foo \d+$/);
    expect(await c.request("K")).toBe("K 0");
    const plain = await client(await serve());
    expect(await plain.request("K")).toBe("K 0");
  });

  it("answers keyed requests NO_ACTIVE until the store's map is read, when a map is configured", async () => {
    const gate = new SlotGate("east", { awaitMap: true });
    const c = await client(await serve({ slots: gate }));
    expect(await c.request(`A ${EAST_KEY} 30 0 r1`)).toMatch(/^E A bar NO_ACTIVE r1 .*slot map/);
    expect(await c.request("K")).toBe("K 0");
    gate.update(halves(2n));
    expect(gate.awaitingMap).toBe(false);
    expect(await c.request(`A ${EAST_KEY} 30 0 r1`)).toMatch(/^A bar \d+ r1$/);
  });

  it("takes a newer map and ignores an older one (a late watch event)", () => {
    const gate = new SlotGate("west");
    expect(gate.update(halves(5n))).toBe(true);
    const swapped = SlotMap.of(4n, clusters, [
      { from: 0, to: 8191, cluster: "west" },
      { from: 8192, to: 16383, cluster: "east" },
    ]);
    expect(gate.update(swapped)).toBe(false);
    expect(gate.map?.version).toBe(5n);
    expect(gate.check({ op: "A", key: WEST_KEY, leaseMs: 1000, waitMs: 0 })).toBeUndefined();
    const verdict = gate.check({ op: "A", key: EAST_KEY, leaseMs: 1000, waitMs: 0 });
    expect(verdict?.kind === "redirect" && verdict.reply.cluster).toBe("east");
    expect(new SlotGate("north").listed).toBe(true);
    const north = new SlotGate("north");
    north.update(halves(1n));
    expect(north.listed).toBe(false);
  });

  it("after taking the lease serves no key until its latest re-read of the map answered (not a watch event, not an older read)", () => {
    const gate = new SlotGate("east");
    gate.update(halves(1n));
    const first = gate.awaitReread();
    const second = gate.awaitReread();
    const request = { op: "A", key: EAST_KEY, leaseMs: 1000, waitMs: 0 } as const;
    expect(gate.check(request)).toMatchObject({ kind: "refuse", code: "NO_ACTIVE" });
    gate.update(halves(2n)); // the watch
    gate.reread(first, halves(2n));
    expect(gate.awaitingMap).toBe(true);
    gate.reread(second, halves(3n));
    expect(gate.awaitingMap).toBe(false);
    expect(gate.map?.version).toBe(3n);
    expect(gate.check(request)).toBeUndefined();
  });

  it("with epochs required, refuses gained slots until an epoch asked for after the gain is in use", () => {
    const gate = new SlotGate("east");
    gate.update(halves(1n));
    gate.requireEpochForGains(); // what it owns now counts as gained now
    const request = { op: "A", key: EAST_KEY, leaseMs: 1000, waitMs: 0 } as const;
    expect(gate.check(request)).toMatchObject({ code: "SLOT_MOVING" });
    // A standby leaves it to its active (M): only the node that grants refuses.
    expect(gate.check(request, false)).toBeUndefined();
    const early = gate.epochTicket();
    const all = SlotMap.of(2n, clusters, [{ from: 0, to: 16383, cluster: "east" }]);
    gate.update(all);
    gate.epochInUse(early); // asked for before the second gain was read: the west half still waits
    expect(gate.check(request)).toBeUndefined();
    expect(gate.check({ ...request, key: WEST_KEY })).toMatchObject({ code: "SLOT_MOVING" });
    expect(gate.needsEpoch).toBe(true);
    gate.epochInUse(gate.epochTicket());
    expect(gate.needsEpoch).toBe(false);
    expect(gate.check({ ...request, key: WEST_KEY })).toBeUndefined();
  });
});

describe("followSlotMap", () => {
  const recorder = () => {
    const seen: string[] = [];
    return {
      seen,
      events: {
        mapChanged: (map: SlotMap) => seen.push(`changed ${map.version}`),
        mapRefused: (version: bigint) => seen.push(`refused ${version}`),
        mapDeleted: () => seen.push("deleted"),
        seedFailed: () => seen.push("seed failed"),
      },
    };
  };

  it("seeds an empty store once, and every node then follows the store's document, not its file", async () => {
    const store = new MemoryCoordinationStore(monotonicClock);
    const first = new SlotGate("east", { awaitMap: true });
    const { seen, events } = recorder();
    const stop = followSlotMap(store, first, halves(1n), events);
    await vi.waitFor(() => expect(first.awaitingMap).toBe(false));
    expect(first.map?.ranges).toEqual(halves(1n).ranges);
    // A second node with another file reads the store's map.
    const second = new SlotGate("west", { awaitMap: true });
    const swapped = SlotMap.of(1n, clusters, [{ from: 0, to: 16383, cluster: "west" }]);
    const stopSecond = followSlotMap(store, second, swapped, recorder().events);
    await vi.waitFor(() => expect(second.map?.version).toBe(first.map?.version));
    expect(second.map?.clusterOf(WEST_KEY)).toBe("west");
    expect(second.map?.clusterOf(EAST_KEY)).toBe("east");
    // A change to the document reaches both; a broken one is refused and the map kept.
    const current = (await store.readDocument(SLOT_MAP_DOCUMENT))!;
    const next = await store.writeDocument(SLOT_MAP_DOCUMENT, swapped.toDocument(), current.version);
    await vi.waitFor(() => expect(first.map?.version).toBe(next));
    expect(first.map?.clusterOf(EAST_KEY)).toBe("west");
    await store.writeDocument(SLOT_MAP_DOCUMENT, "{}", next!);
    await vi.waitFor(() => expect(seen.at(-1)).toMatch(/^refused /));
    expect(first.map?.version).toBe(next);
    expect(seen[0]).toMatch(/^changed /);
    stop();
    stopSecond();
  });
});
