import { describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { LockEngine } from "./engine.js";
import { EXCLUSIVE, type LockMode, permits, SHARED } from "./lock-mode.js";
import { SemaphoreRules } from "./semaphore-rules.js";
import { TokenIssuer } from "./token-issuer.js";

function setup() {
  const clock = new ManualClock(0);
  const granted: Array<{ payload: string; token: bigint; slot: number | undefined }> = [];
  const journal: string[] = [];
  const engine = new LockEngine<string>({
    clock,
    tokens: new TokenIssuer(1n, () => 2n),
    events: {
      granted: (payload, _k, token, _id, _w, slot) => granted.push({ payload, token, slot }),
      timedOut: () => {},
    },
    journal: {
      grant: (key, token, leaseMs, id, _d, mode, slot) =>
        journal.push(`G ${key} ${token} ${leaseMs} ${id ?? "-"} ${mode?.kind ?? "x"} ${slot ?? "-"}`),
      free: (key, token, cause) => journal.push(`F ${key} ${token} ${cause}`),
      extend: (key, token, leaseMs) => journal.push(`X ${key} ${token} ${leaseMs}`),
    },
  });
  const session = engine.openSession();
  const acquire = (payload: string, mode = EXCLUSIVE, waitMs = 0, id?: string) =>
    engine.acquire(session, { key: "k", leaseMs: 1000, waitMs, id, payload, mode });
  return { clock, engine, granted, journal, acquire };
}

const tokenOf = (outcome: { status: string }) => (outcome as unknown as { token: bigint }).token;

describe("LockEngine lock modes", () => {
  it("grants readers together, makes a writer wait for all of them, and keeps later readers behind the writer", () => {
    const { engine, granted, acquire } = setup();
    const r1 = tokenOf(acquire("r1", SHARED));
    const r2 = tokenOf(acquire("r2", SHARED));
    expect(r2).toBeGreaterThan(r1);
    expect(acquire("w", EXCLUSIVE).status).toBe("queued");
    // A reader arriving behind a waiting writer waits too: the writer is not starved.
    expect(acquire("r3", SHARED).status).toBe("queued");
    expect(engine.release("k", r1)).toBe(true);
    expect(granted).toEqual([]);
    expect(engine.release("k", r2)).toBe(true);
    expect(granted.map((g) => g.payload)).toEqual(["w"]);
    expect(engine.release("k", granted[0]!.token)).toBe(true);
    expect(granted.map((g) => g.payload)).toEqual(["w", "r3"]);
    expect(engine.holdersOf("k").map((h) => h.mode)).toEqual(["shared"]);
  });

  it("grants nothing when a head waiter's connection closes while the node does not serve, and grants the heads once it serves again", () => {
    const { engine, granted, acquire } = setup();
    acquire("r1", SHARED);
    const writers = engine.openSession();
    // A writer waits behind the reader; a reader behind the writer waits for it (phase-fair).
    engine.acquire(writers, { key: "k", leaseMs: 1000, waitMs: 5000, payload: "w", mode: EXCLUSIVE });
    expect(acquire("r2", SHARED, 5000).status).toBe("queued");
    // The node stops serving (a hold, a handoff): the writer's connection closes meanwhile.
    engine.setGranting(false);
    engine.closeSession(writers);
    expect(granted).toEqual([]);
    expect(engine.queue("k")).toEqual(["r2"]);
    engine.setGranting(true);
    expect(granted.map((g) => g.payload)).toEqual(["r2"]);
  });

  it("never grants a closed connection's own waiter when its waiter at the head leaves with it", () => {
    const { engine, granted, acquire } = setup();
    acquire("r1", SHARED);
    const leaving = engine.openSession();
    engine.acquire(leaving, { key: "k", leaseMs: 1000, waitMs: 5000, payload: "w", mode: EXCLUSIVE });
    engine.acquire(leaving, { key: "k", leaseMs: 1000, waitMs: 5000, payload: "r2", mode: SHARED });
    expect(engine.closeSession(leaving)).toBe(2);
    expect(granted).toEqual([]);
    expect(engine.holdersOf("k").length).toBe(1);
  });

  it("grants every consecutive reader at the head at once, and stops at the next writer", () => {
    const { engine, granted, acquire } = setup();
    const w = tokenOf(acquire("w1"));
    for (const p of ["r1", "r2", "r3"]) acquire(p, SHARED);
    acquire("w2");
    acquire("r4", SHARED);
    engine.release("k", w);
    expect(granted.map((g) => g.payload)).toEqual(["r1", "r2", "r3"]);
    expect(engine.queue("k")).toEqual(["w2", "r4"]);
  });

  it("hands a semaphore's permits out in FIFO order, each on the lowest free slot", () => {
    const { engine, granted, acquire } = setup();
    const p = permits(3);
    const first = [acquire("a", p), acquire("b", p), acquire("c", p)];
    expect(first.map((o) => (o as { slot: number }).slot)).toEqual([0, 1, 2]);
    expect(acquire("d", p).status).toBe("queued");
    expect(acquire("e", p).status).toBe("queued");
    engine.release("k", tokenOf(first[1]!));
    expect(granted).toEqual([expect.objectContaining({ payload: "d", slot: 1 })]);
    expect(engine.holdersOf("k").map((h) => h.slot)).toEqual([0, 2, 1]);
  });

  it("refuses a mode the key's kind or limit disagrees with, and forgets both once the key is idle", () => {
    const { engine, acquire } = setup();
    const held = tokenOf(acquire("a", permits(2)));
    expect(acquire("b", permits(3))).toEqual({ status: "rejected", code: "LIMIT_MISMATCH", limit: 2 });
    expect(acquire("c", EXCLUSIVE)).toEqual({
      status: "rejected",
      code: "KIND_MISMATCH",
      current: "semaphore",
    });
    expect(acquire("d", SHARED)).toMatchObject({ code: "KIND_MISMATCH" });
    engine.release("k", held);
    expect(acquire("e", permits(3))).toMatchObject({ status: "granted", slot: 0 });
  });

  it("tells of a cancelled head before it grants the readers behind it", () => {
    const { engine, granted, acquire } = setup();
    const reader = tokenOf(acquire("r1", SHARED));
    acquire("w", EXCLUSIVE, 0, "w-id");
    acquire("r2", SHARED);
    const order: string[] = [];
    engine.cancel("k", "w-id", (payload) =>
      order.push(`cancelled ${payload} with ${granted.length} granted`),
    );
    expect(order).toEqual(["cancelled w with 0 granted"]);
    expect(granted.map((g) => g.payload)).toEqual(["r2"]);
    expect(engine.release("k", reader)).toBe(true);
  });

  it("replays a retried acquire (same id) with the same token and slot", () => {
    const { acquire } = setup();
    acquire("a", permits(2), 0, "id-a");
    const b = acquire("b", permits(2), 0, "id-b");
    expect(acquire("b again", permits(2), 0, "id-b")).toEqual({ ...b, replayed: true });
  });

  it("expires each holder's own lease and grants the waiters that fit", () => {
    const { clock, engine, granted, acquire } = setup();
    acquire("r1", SHARED);
    clock.advance(500);
    acquire("r2", SHARED);
    acquire("w");
    clock.advance(600);
    engine.tick();
    expect(granted).toEqual([]);
    clock.advance(500);
    engine.tick();
    expect(granted.map((g) => g.payload)).toEqual(["w"]);
  });

  it("journals each grant with its mode and slot, and each free by token", () => {
    const { engine, journal, acquire } = setup();
    const t = tokenOf(acquire("a", permits(2), 0, "i1"));
    acquire("b", SHARED);
    engine.release("k", t);
    expect(journal).toEqual([`G k ${t} 1000 i1 permit 0`, `F k ${t} release`]);
  });

  it("installs replicated shared holders and permits, snapshots them, and removes them by token", () => {
    const { engine } = setup();
    engine.installHolder("s", 11n, 500, "a", SHARED);
    engine.installHolder("s", 12n, 500, "b", SHARED);
    engine.installHolder("p", 13n, 500, undefined, permits(4), 3);
    engine.installHolder("p", 14n, 500, undefined, permits(4), 3); // the active's view of slot 3 wins
    expect(engine.holderCount).toBe(3);
    expect([...engine.holders()].map((h) => [h.key, h.token, h.mode.kind, h.slot])).toEqual([
      ["s", 11n, "shared", -1],
      ["s", 12n, "shared", -1],
      ["p", 14n, "permit", 3],
    ]);
    engine.removeHolder("s", 11n);
    expect(engine.holdersOf("s").map((h) => h.token)).toEqual([12n]);
    engine.installHolder("s", 15n, 500, undefined, EXCLUSIVE); // an exclusive holder replaces them
    expect(engine.holdersOf("s").map((h) => [h.token, h.mode])).toEqual([[15n, "exclusive"]]);
    engine.removeHolder("p", 14n);
    expect(engine.keyCount).toBe(1);
    expect(engine.holderCount).toBe(1);
    expect(engine.maxHeldToken()).toBe(15n);
    // Released, its token's epoch stays a floor for the next one; a cleared table has none.
    engine.removeHolder("s", 15n);
    expect(engine.maxHeldToken()).toBe(15n);
    engine.clear();
    expect(engine.maxHeldToken()).toBe(0n);
  });
});

describe("LockEngine with configured semaphores", () => {
  it("makes a matching key a semaphore of the configured permits, and leaves other keys alone", () => {
    const engine = new LockEngine<string>({
      clock: new ManualClock(0),
      tokens: new TokenIssuer(1n, () => 2n),
      events: { granted: () => {}, timedOut: () => {} },
      semaphores: new SemaphoreRules([
        { pattern: "tenant:*", limit: 2 },
        { pattern: "tenant:vip", limit: 5 },
      ]),
    });
    const session = engine.openSession();
    const acquire = (key: string, mode: LockMode) =>
      engine.acquire(session, { key, leaseMs: 1000, waitMs: 0, payload: key, mode });
    expect(acquire("tenant:1", permits(3))).toEqual({ status: "rejected", code: "LIMIT_MISMATCH", limit: 2 });
    expect(acquire("tenant:1", EXCLUSIVE)).toMatchObject({ code: "KIND_MISMATCH", current: "semaphore" });
    expect(engine.tryAcquire("tenant:1", 1000, undefined, session, SHARED)).toMatchObject({
      code: "KIND_MISMATCH",
    });
    expect(acquire("tenant:1", permits(2))).toMatchObject({ status: "granted", slot: 0 });
    expect(acquire("tenant:vip", permits(5))).toMatchObject({ status: "granted", slot: 0 });
    expect(acquire("other", permits(3))).toMatchObject({ status: "granted", slot: 0 });
    expect(acquire("other2", EXCLUSIVE)).toMatchObject({ status: "granted" });
  });
});
