import { ManualClock, TimerQueue } from "@lock/deadline-heap";
import { keySlot, type Request, SlotMap } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { MemoryCoordinationStore } from "../coordination/memory-store.js";
import { MemoryEpochStore } from "../epoch/epoch-store.js";
import { DEFAULT_SERVER_LIMITS } from "../limits.js";
import { manualTime } from "../manual-time.test.data.js";
import { type AcquireSink, LockNode } from "../node.js";
import { SlotGate } from "./slot-gate.js";
import { followSlotMap, SLOT_MAP_DOCUMENT } from "./slot-map-follower.js";
import { SLOT_MOVE_POLL_MS, SlotMoves } from "./slot-moves.js";

const clusters = new Map([
  ["east", ["127.0.0.1:7001"]],
  ["west", ["127.0.0.1:7101"]],
]);
/** keySlot("bar") is 5061: east's half, and the slot moved below. */
const KEY = "bar";
const SLOT = keySlot(KEY);
const halves = SlotMap.of(1n, clusters, [
  { from: 0, to: 8191, cluster: "east" },
  { from: 8192, to: 16383, cluster: "west" },
]);
const acquire = (key: string): Extract<Request, { op: "A" }> => ({ op: "A", key, leaseMs: 1000, waitMs: 0 });

/** One cluster's active: a LockNode, its gate on the store's map, and its SlotMoves. */
function member(name: string, store: MemoryCoordinationStore, clock: ManualClock, timers: TimerQueue) {
  const node = new LockNode({
    dataDir: undefined,
    limits: DEFAULT_SERVER_LIMITS,
    advertise: clusters.get(name)![0]!,
    clock,
    timers,
    startAs: "standby",
    epochStore: new MemoryEpochStore(),
    wallNow: () => 1_800_000_000_000,
  });
  const gate = new SlotGate(name);
  const state = { active: true, mayCommit: true, raises: 0, gainsServed: 0 };
  const moves = new SlotMoves({
    gate,
    store,
    node,
    timers,
    events: { gainsServed: () => state.gainsServed++ },
    host: {
      active: () => state.active,
      mayCommit: () => state.mayCommit,
      raiseEpoch: async () => {
        state.raises += 1;
        node.useEpoch(await store.takeEpoch(node.highestEpoch));
        return true;
      },
    },
  });
  const stop = followSlotMap(store, gate, undefined, {
    mapChanged: () => {},
    mapRefused: () => {},
    mapDeleted: () => {},
    seedFailed: () => {},
  });
  const session = node.openSession();
  const replies: string[] = [];
  const sink: AcquireSink = {
    granted: (key, token) => replies.push(`granted ${key} ${token}`),
    timedOut: (key) => replies.push(`timed out ${key}`),
    refused: (key, id, code) => replies.push(`${code} ${key} ${id}`),
  };
  return {
    node,
    gate,
    moves,
    state,
    replies,
    acquire: (key: string, id?: string) => {
      const outcome = node.acquire(session, { key, leaseMs: 1000, waitMs: 0, id, payload: sink });
      node.afterRequests();
      return outcome;
    },
    close: () => {
      stop();
      moves.close();
      node.close();
    },
  };
}

async function setup() {
  const clock = new ManualClock(1_000);
  const timers = new TimerQueue(clock, { host: "manual" });
  const store = new MemoryCoordinationStore(clock);
  await store.writeDocument(SLOT_MAP_DOCUMENT, halves.toDocument(), 0n);
  const east = member("east", store, clock, timers);
  const west = member("west", store, clock, timers);
  for (const m of [east, west]) m.node.setRole("active", m.node.advertise);
  east.node.useEpoch(await store.takeEpoch(0n));
  west.node.useEpoch(await store.takeEpoch(0n));
  const advance = manualTime(clock, timers);
  /** Begins the move of KEY's slot from east to west, as the admin API does. */
  const beginMove = async () => {
    const current = (await store.readDocument(SLOT_MAP_DOCUMENT))!;
    const map = SlotMap.fromDocument(current.version, current.value);
    const next = map.withMoveBegun(SLOT, SLOT, "west", current.version + 1n);
    expect(await store.writeDocument(SLOT_MAP_DOCUMENT, next.toDocument(), current.version)).toBeDefined();
    await advance(0);
  };
  const owner = async () => {
    const current = (await store.readDocument(SLOT_MAP_DOCUMENT))!;
    return SlotMap.fromDocument(current.version, current.value).rangeOf(SLOT);
  };
  return { clock, timers, store, east, west, advance, beginMove, owner };
}

describe("SlotMoves", () => {
  it("the source refuses and withdraws what would grant in the moving slot, commits once its holders released, and the target grants above every source token", async () => {
    const { east, west, advance, beginMove, owner, store } = await setup();
    // West's first map counts as gained until an epoch taken after it is in use.
    await advance(SLOT_MOVE_POLL_MS);
    expect(west.state.raises).toBe(1);
    expect(west.gate.needsEpoch).toBe(false);
    expect(west.state.gainsServed).toBe(1);

    const held = east.acquire(KEY, "h1");
    expect(held.status).toBe("granted");
    const sourceToken = held.status === "granted" ? held.token : 0n;
    expect(east.acquire(KEY, "w1").status).toBe("queued");
    await beginMove();
    // The queued acquire is refused and nothing new is granted in the slot; other keys still are.
    expect(east.replies).toEqual(["SLOT_MOVING bar w1"]);
    expect(east.gate.check(acquire(KEY))).toMatchObject({ kind: "refuse", code: "SLOT_MOVING" });
    expect(east.gate.check({ op: "X", key: KEY, token: sourceToken, leaseMs: 1000 })).toMatchObject({
      code: "SLOT_MOVING",
    });
    expect(east.gate.check({ op: "R", key: KEY, token: sourceToken })).toBeUndefined();
    expect(east.gate.check(acquire("foo"))).toMatchObject({ kind: "redirect" });
    // Meanwhile the target sends the slot's requests to the source.
    expect(west.gate.check(acquire(KEY))).toMatchObject({ kind: "redirect", reply: { cluster: "east" } });

    await advance(5 * SLOT_MOVE_POLL_MS);
    expect((await owner()).movingTo).toBe("west"); // a holder is left: no commit
    const counterBeforeCommit = await store.readEpoch();
    expect(east.node.release(KEY, sourceToken)).toBe(true);
    await advance(SLOT_MOVE_POLL_MS);
    expect(await owner()).toEqual({ from: SLOT, to: SLOT, cluster: "west" });

    // The source now redirects; the target refuses until its fresh epoch is in use, then grants.
    expect(east.gate.check(acquire(KEY))).toMatchObject({ kind: "redirect", reply: { cluster: "west" } });
    await advance(SLOT_MOVE_POLL_MS);
    expect(west.state.raises).toBe(2);
    expect(west.state.gainsServed).toBe(2);
    expect(west.gate.check(acquire(KEY))).toBeUndefined();
    const granted = west.acquire(KEY);
    expect(granted.status === "granted" && granted.token > sourceToken).toBe(true);
    expect(west.node.epoch).toBeGreaterThan(counterBeforeCommit);
    east.close();
    west.close();
  });

  it("a holder that neither releases nor extends is drained by its lease running out", async () => {
    const { east, west, advance, beginMove, owner } = await setup();
    expect(east.acquire(KEY).status).toBe("granted");
    await beginMove();
    await advance(900);
    expect((await owner()).movingTo).toBe("west");
    await advance(200);
    expect((await owner()).cluster).toBe("west");
    east.close();
    west.close();
  });

  it("commits only as the active with a valid lease", async () => {
    const { east, west, advance, beginMove, owner } = await setup();
    east.state.mayCommit = false;
    await beginMove();
    await advance(10 * SLOT_MOVE_POLL_MS);
    expect((await owner()).movingTo).toBe("west");
    east.state.mayCommit = true;
    east.moves.step();
    await advance(0);
    expect((await owner()).cluster).toBe("west");
    east.close();
    west.close();
  });

  it("a standby neither drains nor raises: its active does", async () => {
    const { east, west, advance, beginMove, owner } = await setup();
    west.state.active = false;
    east.state.active = false;
    const raises = west.state.raises;
    expect(east.acquire(KEY, "h1").status).toBe("granted");
    expect(east.acquire(KEY, "w1").status).toBe("queued");
    await beginMove();
    await advance(10 * SLOT_MOVE_POLL_MS);
    expect(east.replies).toEqual([]);
    expect(west.state.raises).toBe(raises);
    expect((await owner()).movingTo).toBe("west");
    east.close();
    west.close();
  });
});
