import { MAX_EPOCH } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { type EngineJournal, LockEngine } from "./engine.js";
import { TokenIssuer } from "./token-issuer.js";

interface Harness {
  clock: ManualClock;
  engine: LockEngine<string>;
  granted: Array<[string, string, bigint]>;
  timedOut: Array<[string, string]>;
  journal: string[];
}

function setup(limits?: { maxWaitersPerKey?: number; maxKeys?: number }): Harness {
  const clock = new ManualClock(1_000);
  const granted: Array<[string, string, bigint]> = [];
  const timedOut: Array<[string, string]> = [];
  const journal: string[] = [];
  const recorder: EngineJournal = {
    grant: (key, token, leaseMs, id) => journal.push(`grant ${key} ${token} ${leaseMs} ${id ?? "-"}`),
    free: (key, token, cause) => journal.push(`free ${key} ${token} ${cause}`),
    extend: (key, token, leaseMs) => journal.push(`extend ${key} ${token} ${leaseMs}`),
  };
  let epoch = 1n;
  const engine = new LockEngine<string>({
    clock,
    tokens: new TokenIssuer(epoch, () => ++epoch),
    events: {
      granted: (payload, key, token) => granted.push([payload, key, token]),
      timedOut: (payload, key) => timedOut.push([payload, key]),
    },
    journal: recorder,
    ...(limits ? { limits } : {}),
  });
  return { clock, engine, granted, timedOut, journal };
}

function grantedToken(outcome: { status: string; token?: bigint }): bigint {
  if (outcome.status !== "granted" || outcome.token === undefined)
    throw new Error(`not granted: ${outcome.status}`);
  return outcome.token;
}

describe("LockEngine", () => {
  it("grants a free key at once and queues on a held key", () => {
    const { engine } = setup();
    const s = engine.openSession();
    const first = engine.acquire(s, { key: "k", leaseMs: 1000, waitMs: 0, payload: "a" });
    expect(first.status).toBe("granted");
    expect(engine.acquire(s, { key: "k", leaseMs: 1000, waitMs: 0, payload: "b" })).toEqual({
      status: "queued",
      displaced: undefined,
    });
    expect(engine.keyCount).toBe(1);
    expect(engine.waiterCount).toBe(1);
  });

  it("hands off in FIFO order with a fresh, larger token on every release", () => {
    const { engine, granted } = setup();
    const s = engine.openSession();
    let token = grantedToken(engine.acquire(s, { key: "k", leaseMs: 1000, waitMs: 0, payload: "w0" }));
    for (let i = 1; i <= 200; i++)
      engine.acquire(s, { key: "k", leaseMs: 1000, waitMs: 0, payload: `w${i}` });
    for (let i = 1; i <= 200; i++) {
      expect(engine.release("k", token)).toBe(true);
      const [payload, key, next] = granted.at(-1)!;
      expect([payload, key]).toEqual([`w${i}`, "k"]);
      expect(next).toBeGreaterThan(token);
      token = next;
    }
    expect(engine.release("k", token)).toBe(true);
    expect(engine.keyCount).toBe(0);
  });

  it("refuses a stale release and a stale extend without changing anything", () => {
    const { engine, journal } = setup();
    const s = engine.openSession();
    const token = grantedToken(engine.acquire(s, { key: "k", leaseMs: 1000, waitMs: 0, payload: "a" }));
    expect(engine.release("k", token + 1n)).toBe(false);
    expect(engine.extend("k", token - 1n, 5000)).toBe(false);
    expect(engine.release("other", token)).toBe(false);
    expect(engine.holder("k")?.token).toBe(token);
    expect(journal).toHaveLength(1);
    expect(engine.counters.staleReleases).toBe(2);
  });

  it("reclaims an expired lease and hands it to the next waiter; the old token is dead", () => {
    const { engine, clock, granted, journal } = setup();
    const s = engine.openSession();
    const old = grantedToken(engine.acquire(s, { key: "k", leaseMs: 500, waitMs: 0, payload: "a" }));
    engine.acquire(s, { key: "k", leaseMs: 700, waitMs: 0, payload: "b" });
    expect(engine.nextDeadline()).toBe(1_500);
    clock.advance(499);
    engine.tick();
    expect(granted).toHaveLength(0);
    clock.advance(1);
    engine.tick();
    expect(granted).toHaveLength(1);
    const [payload, , fresh] = granted[0]!;
    expect(payload).toBe("b");
    expect(fresh).toBeGreaterThan(old);
    expect(engine.release("k", old)).toBe(false);
    expect(engine.extend("k", old, 1000)).toBe(false);
    expect(engine.holder("k")).toEqual({ token: fresh, remainingMs: 700, id: undefined });
    expect(journal.slice(1)).toEqual([`free k ${old} expiry`, `grant k ${fresh} 700 -`]);
  });

  it("times a waiter out and never grants it afterwards", () => {
    const { engine, clock, granted, timedOut } = setup();
    const s = engine.openSession();
    const token = grantedToken(engine.acquire(s, { key: "k", leaseMs: 10_000, waitMs: 0, payload: "a" }));
    engine.acquire(s, { key: "k", leaseMs: 1000, waitMs: 300, payload: "b" });
    engine.acquire(s, { key: "k", leaseMs: 1000, waitMs: 0, payload: "c" });
    clock.advance(300);
    engine.tick();
    expect(timedOut).toEqual([["b", "k"]]);
    expect(engine.waiterCount).toBe(1);
    engine.release("k", token);
    expect(granted.map(([p]) => p)).toEqual(["c"]);
  });

  it("at the same instant, expires the lease before the waiter's wait: the waiter gets the key", () => {
    const { engine, clock, granted, timedOut } = setup();
    const s = engine.openSession();
    engine.acquire(s, { key: "k", leaseMs: 300, waitMs: 0, payload: "a" });
    engine.acquire(s, { key: "k", leaseMs: 1000, waitMs: 300, payload: "b" });
    clock.advance(1000);
    engine.tick();
    expect(granted.map(([p]) => p)).toEqual(["b"]);
    expect(timedOut).toEqual([]);
  });

  it("processes deadlines in order when the tick comes late", () => {
    const { engine, clock, granted, timedOut } = setup();
    const s = engine.openSession();
    engine.acquire(s, { key: "k", leaseMs: 100, waitMs: 0, payload: "a" });
    engine.acquire(s, { key: "k", leaseMs: 1000, waitMs: 50, payload: "b" }); // times out at 50
    engine.acquire(s, { key: "k", leaseMs: 1000, waitMs: 200, payload: "c" }); // key frees at 100
    clock.advance(5_000);
    engine.tick();
    expect(timedOut.map(([p]) => p)).toEqual(["b"]);
    expect(granted.map(([p]) => p)).toEqual(["c"]);
  });

  it("try-acquire grants only a free key and never queues", () => {
    const { engine } = setup();
    const s = engine.openSession();
    const t = engine.tryAcquire("k", 1000);
    expect(t.status).toBe("granted");
    expect(engine.tryAcquire("k", 1000)).toEqual({ status: "busy" });
    expect(engine.waiterCount).toBe(0);
    engine.acquire(s, { key: "k", leaseMs: 1000, waitMs: 0, payload: "q" });
    engine.release("k", grantedToken(t));
    expect(engine.tryAcquire("k", 1000)).toEqual({ status: "busy" });
  });

  it("extends the lease from now", () => {
    const { engine, clock, journal } = setup();
    const s = engine.openSession();
    const token = grantedToken(engine.acquire(s, { key: "k", leaseMs: 1000, waitMs: 0, payload: "a" }));
    clock.advance(900);
    expect(engine.extend("k", token, 1000)).toBe(true);
    clock.advance(900);
    engine.tick();
    expect(engine.holder("k")?.token).toBe(token);
    clock.advance(100);
    engine.tick();
    expect(engine.holder("k")).toBeUndefined();
    expect(journal).toContain(`extend k ${token} 1000`);
  });

  it("a retried acquire with the same id finds its grant instead of queuing twice", () => {
    const { engine } = setup();
    const s1 = engine.openSession();
    const s2 = engine.openSession();
    const token = grantedToken(
      engine.acquire(s1, { key: "k", leaseMs: 1000, waitMs: 0, id: "r1", payload: "a" }),
    );
    expect(engine.acquire(s2, { key: "k", leaseMs: 1000, waitMs: 0, id: "r1", payload: "a-retry" })).toEqual({
      status: "granted",
      token,
      replayed: true,
    });
    expect(engine.tryAcquire("k", 1000, "r1")).toEqual({ status: "granted", token, replayed: true });
    // A different call (different id) from the same session must wait like anyone else.
    expect(engine.acquire(s1, { key: "k", leaseMs: 1000, waitMs: 0, id: "r2", payload: "b" }).status).toBe(
      "queued",
    );
    expect(engine.waiterCount).toBe(1);
  });

  it("a retried waiter keeps its place and moves to the new connection", () => {
    const { engine, granted } = setup();
    const s1 = engine.openSession();
    const s2 = engine.openSession();
    const token = grantedToken(engine.acquire(s1, { key: "k", leaseMs: 1000, waitMs: 0, payload: "holder" }));
    engine.acquire(s1, { key: "k", leaseMs: 1000, waitMs: 0, id: "first", payload: "first@s1" });
    engine.acquire(s2, { key: "k", leaseMs: 1000, waitMs: 0, id: "second", payload: "second" });
    expect(
      engine.acquire(s2, { key: "k", leaseMs: 1000, waitMs: 0, id: "first", payload: "first@s2" }),
    ).toEqual({
      status: "queued",
      displaced: "first@s1",
    });
    expect(engine.queue("k")).toEqual(["first@s2", "second"]);
    engine.closeSession(s1); // the old connection dies: the moved waiter stays
    engine.release("k", token);
    expect(granted.map(([p]) => p)).toEqual(["first@s2"]);
  });

  it("drops a closed connection's waiters but keeps its held locks", () => {
    const { engine, granted } = setup();
    const s1 = engine.openSession();
    const s2 = engine.openSession();
    const token = grantedToken(engine.acquire(s1, { key: "k", leaseMs: 1000, waitMs: 0, payload: "held" }));
    engine.acquire(s1, { key: "k2", leaseMs: 1000, waitMs: 0, payload: "other" });
    engine.acquire(s1, { key: "k", leaseMs: 1000, waitMs: 0, payload: "a" });
    engine.acquire(s2, { key: "k", leaseMs: 1000, waitMs: 0, payload: "b" });
    engine.acquire(s1, { key: "k", leaseMs: 1000, waitMs: 500, payload: "c" });
    expect(engine.closeSession(s1)).toBe(2);
    expect(engine.holder("k")?.token).toBe(token);
    expect(engine.queue("k")).toEqual(["b"]);
    expect(engine.release("k", token)).toBe(true);
    expect(granted.map(([p]) => p)).toEqual(["b"]);
    expect(engine.nextDeadline()).toBeDefined(); // only leases remain scheduled
  });

  it("cancels a queued acquire by id", () => {
    const { engine } = setup();
    const s = engine.openSession();
    engine.acquire(s, { key: "k", leaseMs: 1000, waitMs: 0, payload: "holder" });
    engine.acquire(s, { key: "k", leaseMs: 1000, waitMs: 100, id: "x", payload: "x" });
    expect(engine.cancel("k", "x")).toBe("x");
    expect(engine.cancel("k", "x")).toBeUndefined();
    expect(engine.waiterCount).toBe(0);
  });

  it("enforces the waiter and key limits", () => {
    const { engine } = setup({ maxWaitersPerKey: 2, maxKeys: 2 });
    const s = engine.openSession();
    engine.acquire(s, { key: "a", leaseMs: 1000, waitMs: 0, payload: "1" });
    engine.acquire(s, { key: "a", leaseMs: 1000, waitMs: 0, payload: "2" });
    engine.acquire(s, { key: "a", leaseMs: 1000, waitMs: 0, payload: "3" });
    expect(engine.acquire(s, { key: "a", leaseMs: 1000, waitMs: 0, payload: "4" })).toEqual({
      status: "rejected",
      code: "TOO_MANY_WAITERS",
    });
    engine.acquire(s, { key: "b", leaseMs: 1000, waitMs: 0, payload: "5" });
    expect(engine.acquire(s, { key: "c", leaseMs: 1000, waitMs: 0, payload: "6" })).toEqual({
      status: "rejected",
      code: "TOO_MANY_KEYS",
    });
    expect(engine.tryAcquire("c", 1000)).toEqual({ status: "rejected", code: "TOO_MANY_KEYS" });
  });

  it("tells the holder (its session, or its request id) from someone who only knows the token", () => {
    const { engine } = setup();
    const mine = engine.openSession();
    const theirs = engine.openSession();
    const token = grantedToken(
      engine.acquire(mine, { key: "k", leaseMs: 1000, waitMs: 0, id: "r1", payload: "a" }),
    );
    expect(engine.ownership("k", token, mine, undefined)).toBe("holder");
    expect(engine.ownership("k", token, theirs, undefined)).toBe("not-owner");
    expect(engine.ownership("k", token, theirs, "r2")).toBe("not-owner");
    expect(engine.ownership("k", token, theirs, "r1")).toBe("holder");
    expect(engine.ownership("k", token + 1n, theirs, undefined)).toBe("stale");
    // A retry of the acquire on another session (a reconnect) moves the holder there.
    engine.acquire(theirs, { key: "k", leaseMs: 1000, waitMs: 0, id: "r1", payload: "a" });
    expect(engine.ownership("k", token, theirs, undefined)).toBe("holder");
    // A replicated holder has no session here: only its id proves it.
    engine.installHolder("r", 5n, 1000, "r9");
    expect(engine.ownership("r", 5n, mine, undefined)).toBe("not-owner");
    expect(engine.ownership("r", 5n, mine, "r9")).toBe("holder");
  });

  it("renews the epoch when a sequence runs out, keeping tokens increasing", () => {
    let epoch = 7n;
    const issuer = new TokenIssuer(epoch, () => ++epoch, 3);
    const tokens = Array.from({ length: 7 }, () => issuer.next());
    expect(tokens).toEqual([
      (7n << 24n) + 1n,
      (7n << 24n) + 2n,
      (7n << 24n) + 3n,
      (8n << 24n) + 1n,
      (8n << 24n) + 2n,
      (8n << 24n) + 3n,
      (9n << 24n) + 1n,
    ]);
    expect(issuer.epoch).toBe(9n);
    expect(() => issuer.moveToEpoch(9n)).toThrow(RangeError);
    // The layout's limits are checked, never wrapped: an epoch beyond 40 bits is refused.
    expect(() => issuer.moveToEpoch(MAX_EPOCH + 1n)).toThrow(RangeError);
    expect(() => new TokenIssuer(MAX_EPOCH + 1n, () => 0n)).toThrow(RangeError);
  });
  it("a replica defers lease deadlines and schedules them, a chunk per call, when it starts serving", () => {
    const { engine, clock } = setup();
    engine.deferDeadlines(true);
    engine.installHolder("a", 5n, 100, "r1");
    engine.installHolder("b", 6n, 300, undefined);
    engine.installHolder("c", 7n, 50, undefined);
    expect(engine.nextDeadline()).toBeUndefined();
    clock.advance(200);
    engine.tick();
    expect(engine.keyCount).toBe(3);
    // Serving again schedules nothing at once (millions of holders would block the event loop)…
    engine.deferDeadlines(false);
    expect(engine.nextDeadline()).toBeUndefined();
    // …but a chunk per call; a key released or granted meanwhile is no longer, or already, there.
    expect(engine.release("c", 7n)).toBe(true);
    expect(engine.scheduleDeferred(1)).toBe(true);
    expect(engine.nextDeadline()).toBe(1_100);
    expect(engine.scheduleDeferred(10)).toBe(false);
    expect(engine.scheduleDeferred(10)).toBe(false);
    engine.tick(); // "a" ran out while deferred: it is reclaimed as soon as deadlines run again
    expect(engine.holder("a")).toBeUndefined();
    expect(engine.holder("b")).toEqual({ token: 6n, remainingMs: 100, id: undefined });
  });

  it("clears a slice of keys per call, holders, waiters and deadlines with them, and ends as clear() does", () => {
    const { engine, timedOut } = setup();
    const s = engine.openSession();
    const held = grantedToken(engine.acquire(s, { key: "a", leaseMs: 1000, waitMs: 0, payload: "x" }));
    engine.acquire(s, { key: "a", leaseMs: 1000, waitMs: 5000, payload: "queued" });
    engine.installHolder("b", held + 1n, 1000, "r1");
    engine.installHolder("c", held + 2n, 1000, undefined);
    expect([engine.keyCount, engine.waiterCount, engine.maxHeldToken()]).toEqual([3, 1, held + 2n]);
    expect(engine.clearSome(2)).toBe(true);
    expect([engine.keyCount, engine.holderCount, engine.waiterCount]).toEqual([1, 1, 0]);
    expect(engine.holder("c")?.token).toBe(held + 2n);
    // Nothing of what went is left in the heap: its lease and wait never fire.
    expect(engine.clearSome(2)).toBe(false);
    expect([engine.keyCount, engine.holderCount, engine.maxHeldToken()]).toEqual([0, 0, 0n]);
    expect(engine.nextDeadline()).toBeUndefined();
    expect(timedOut).toEqual([]);
    // The session's quota is given back, and the next sliced clear starts afresh.
    expect(s.heldCount).toBe(0);
    expect(engine.release("a", held)).toBe(false);
    engine.installHolder("d", held + 3n, 1000, undefined);
    expect(engine.clearSome(5)).toBe(false);
    expect(engine.keyCount).toBe(0);
  });
});
