import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { LockEngine } from "./engine.js";
import { SHARED } from "./lock-mode.js";
import { SemaphoreRules } from "./semaphore-rules.js";
import { TokenIssuer } from "./token-issuer.js";

/** Tokens of epoch 1 as 1, 2, 3… */
const BASE = new TokenIssuer(1n, () => 2n).next() - 1n;
const t = (n: number) => BASE + BigInt(n);

function setup(semaphores?: SemaphoreRules) {
  const clock = new ManualClock(0);
  const events: string[] = [];
  const journal: string[] = [];
  const engine = new LockEngine<string>({
    clock,
    tokens: new TokenIssuer(1n, () => 2n),
    limits: { maxBundleKeys: 3, maxKeys: 4 },
    semaphores,
    events: {
      granted: (payload, key, token) => events.push(`granted ${payload} ${key} ${token - BASE}`),
      timedOut: (payload, key) => events.push(`timedOut ${payload} ${key}`),
    },
    journal: {
      grant: (key, token, leaseMs, id) => journal.push(`G ${key} ${token - BASE} ${leaseMs} ${id}`),
      free: (key, token, cause) => journal.push(`F ${key} ${token - BASE} ${cause}`),
      extend: (key, token, leaseMs) => journal.push(`X ${key} ${token - BASE} ${leaseMs}`),
    },
  });
  const session = engine.openSession();
  const bundle = (payload: string, keys: string[], waitMs = 0) =>
    engine.acquireAll(session, { keys, leaseMs: 1000, waitMs, id: payload, payload });
  return { clock, engine, events, journal, session, bundle };
}

describe("LockEngine bundles", () => {
  it("grants every key under one token and one lease, journalled key by key, and releases them as one", () => {
    const { engine, journal, bundle } = setup();
    const outcome = bundle("t1", ["b", "a", "b"]);
    expect(outcome).toMatchObject({ status: "granted", token: t(1), keys: ["a", "b"] });
    expect(journal).toEqual(["G a 1 1000 t1", "G b 1 1000 t1"]);
    expect(engine.ownership("b", t(1), engine.openSession(), "t1")).toBe("holder");
    expect(engine.release("b", t(1))).toBe(true);
    expect(journal.slice(2)).toEqual(["F a 1 release", "F b 1 release"]);
    expect(engine.keyCount).toBe(0);
  });

  it("A,B against B,A: the later bundle waits in both queues and is granted both once the first ends", () => {
    const { engine, events, bundle } = setup();
    bundle("ab", ["a", "b"]);
    expect(bundle("ba", ["b", "a"]).status).toBe("queued");
    expect(engine.waiterCount).toBe(2);
    engine.release("a", t(1));
    expect(events).toEqual(["granted ba a 2"]);
    expect(engine.holder("a")?.token).toBe(t(2));
    expect(engine.holder("b")?.token).toBe(t(2));
  });

  it("keeps a free key for the bundle queued on it: a single acquire arriving later waits behind it", () => {
    const { engine, events, session, bundle } = setup();
    engine.acquire(session, { key: "b", leaseMs: 1000, waitMs: 0, payload: "holder" });
    expect(bundle("ab", ["a", "b"]).status).toBe("queued");
    expect(engine.acquire(session, { key: "a", leaseMs: 1000, waitMs: 0, payload: "late" }).status).toBe(
      "queued",
    );
    expect(engine.isHeld("a")).toBe(false);
    expect(engine.tryAcquire("a", 1000)).toEqual({ status: "busy" });
    engine.release("b", t(1));
    expect(events).toEqual(["granted ab a 2"]);
    engine.release("a", t(2));
    expect(events).toEqual(["granted ab a 2", "granted late a 3"]);
  });

  it("times out once, from every queue, and the keys it headed serve the next waiter", () => {
    const { clock, engine, events, session, bundle } = setup();
    engine.acquire(session, { key: "b", leaseMs: 5000, waitMs: 0, payload: "holder" });
    bundle("ab", ["a", "b"], 100);
    engine.acquire(session, { key: "a", leaseMs: 1000, waitMs: 0, payload: "next" });
    clock.advance(100);
    engine.tick();
    expect(events).toEqual(["timedOut ab a", "granted next a 2"]);
    expect(engine.waiterCount).toBe(0);
  });

  it("a retry with the same id gets the grant back, or takes over the queued places", () => {
    const { engine, session, bundle } = setup();
    bundle("ab", ["a", "b"]);
    expect(bundle("ab", ["b", "a"])).toMatchObject({ status: "granted", token: t(1), replayed: true });
    expect(bundle("cd", ["a", "c"]).status).toBe("queued");
    const again = engine.acquireAll(session, {
      keys: ["a", "c"],
      leaseMs: 1,
      waitMs: 0,
      id: "cd",
      payload: "cd2",
    });
    expect(again).toMatchObject({ status: "queued", displaced: "cd" });
    expect(engine.queue("c")).toEqual(["cd2"]);
  });

  it("extends every key, and expires them together", () => {
    const { clock, engine, journal, bundle } = setup();
    bundle("ab", ["a", "b"]);
    engine.extend("a", t(1), 3000);
    expect(journal.slice(2)).toEqual(["X a 1 3000", "X b 1 3000"]);
    clock.advance(3000);
    engine.tick();
    expect(journal.slice(4)).toEqual(["F a 1 expiry", "F b 1 expiry"]);
    expect(engine.keyCount).toBe(0);
  });

  it("refuses too many keys, shared or semaphore keys, and more than maxKeys holders", () => {
    const { engine, session, bundle } = setup(new SemaphoreRules([{ pattern: "s:*", limit: 2 }]));
    expect(bundle("x", ["a", "b", "c", "d"])).toEqual({ status: "rejected", code: "TOO_MANY_BUNDLE_KEYS" });
    engine.acquire(session, { key: "r", leaseMs: 1000, waitMs: 0, payload: "reader", mode: SHARED });
    expect(bundle("y", ["a", "r"])).toMatchObject({ status: "rejected", code: "KIND_MISMATCH" });
    expect(bundle("v", ["a", "s:1"])).toMatchObject({ code: "KIND_MISMATCH", current: "semaphore" });
    engine.acquire(session, { key: "q", leaseMs: 1000, waitMs: 0, payload: "q" });
    engine.acquire(session, { key: "z", leaseMs: 1000, waitMs: 0, payload: "z" });
    expect(bundle("w", ["a", "b", "c"])).toEqual({ status: "rejected", code: "TOO_MANY_KEYS" });
    expect(engine.keyCount).toBe(3);
  });
});

describe("LockEngine bundles on a standby", () => {
  it("ties a replicated bundle's keys together again: after promotion one release frees them all", () => {
    const active = setup();
    active.bundle("ab", ["a", "b"]);
    active.engine.acquire(active.session, { key: "c", leaseMs: 1000, waitMs: 0, payload: "c" });
    const standby = setup();
    // The snapshot of the active, as a standby installs it: a bundle's keys in a row.
    for (const h of active.engine.holders())
      standby.engine.installHolder(h.key, h.token, h.remainingMs, h.id);
    expect(standby.engine.release("b", t(1))).toBe(true);
    expect(standby.engine.isHeld("a")).toBe(false);
    expect(standby.engine.isHeld("c")).toBe(true);
    expect(standby.journal).toEqual(["F a 1 release", "F b 1 release"]);
  });

  it("ties a bundle's keys even with a few other holders installed between them (a snapshot's slices)", () => {
    const standby = setup();
    standby.engine.installHolder("a", t(1), 1000, "ab");
    standby.engine.installHolder("x", t(2), 1000, "x");
    standby.engine.installHolder("b", t(1), 1000, "ab");
    expect(standby.engine.release("a", t(1))).toBe(true);
    expect([standby.engine.isHeld("b"), standby.engine.isHeld("x")]).toEqual([false, true]);
  });

  it("lets a replicated free of one key untie the bundle (the frees of its other keys follow)", () => {
    const standby = setup();
    standby.engine.installHolder("a", t(1), 1000, "ab");
    standby.engine.installHolder("b", t(1), 1000, "ab");
    standby.engine.removeHolder("a", t(1));
    expect(standby.engine.release("b", t(1))).toBe(true);
    expect(standby.journal).toEqual(["F b 1 release"]);
  });
});

describe("LockEngine bundles replicated (property)", () => {
  type Op =
    | { kind: "bundle"; keys: string[]; leaseMs: number }
    | { kind: "single"; key: string; leaseMs: number }
    | { kind: "release"; pick: number; key: number }
    | { kind: "advance"; ms: number };
  const KEYS = ["a", "b", "c", "d"];
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({
      kind: fc.constant("bundle" as const),
      keys: fc.array(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 4 }),
      leaseMs: fc.integer({ min: 1, max: 50 }),
    }),
    fc.record({
      kind: fc.constant("single" as const),
      key: fc.constantFrom(...KEYS),
      leaseMs: fc.integer({ min: 1, max: 50 }),
    }),
    fc.record({ kind: fc.constant("release" as const), pick: fc.nat(9), key: fc.nat(3) }),
    fc.record({ kind: fc.constant("advance" as const), ms: fc.nat(30) }),
  );

  /** Each grant of `engine` by token, with its keys: what a standby must tie together alike. */
  const grants = (engine: LockEngine<string>) => {
    const byToken = new Map<bigint, string[]>();
    for (const h of engine.holders()) byToken.set(h.token, [...(byToken.get(h.token) ?? []), h.key].sort());
    return byToken;
  };

  it("a standby fed the live stream, or a snapshot, releases each bundle as one, as the active would", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const clock = new ManualClock(0);
        const standby = new LockEngine<string>({
          clock,
          tokens: new TokenIssuer(1n, () => 2n),
          events: { granted: () => {}, timedOut: () => {} },
        });
        const active = new LockEngine<string>({
          clock,
          tokens: new TokenIssuer(1n, () => 2n),
          events: { granted: () => {}, timedOut: () => {} },
          journal: {
            grant: (key, token, leaseMs, id) => standby.installHolder(key, token, leaseMs, id),
            free: (key, token) => standby.removeHolder(key, token),
            extend: (key, token, leaseMs) => standby.installExtension(key, token, leaseMs),
          },
        });
        const session = active.openSession();
        let n = 0;
        for (const o of ops) {
          n += 1;
          if (o.kind === "bundle")
            active.acquireAll(session, {
              keys: o.keys,
              leaseMs: o.leaseMs,
              waitMs: 0,
              id: `b${n}`,
              payload: "",
            });
          else if (o.kind === "single")
            active.acquire(session, { key: o.key, leaseMs: o.leaseMs, waitMs: 0, id: `s${n}`, payload: "" });
          else if (o.kind === "release") {
            const held = [...grants(active)];
            const [token, keys] = held[o.pick % Math.max(1, held.length)] ?? [0n, []];
            if (keys.length > 0) active.release(keys[o.key % keys.length]!, token);
          } else {
            clock.advance(o.ms);
            active.tick();
          }
        }
        const expected = grants(active);
        const fromSnapshot = new LockEngine<string>({
          clock,
          tokens: new TokenIssuer(1n, () => 2n),
          events: { granted: () => {}, timedOut: () => {} },
        });
        for (const h of active.holders()) fromSnapshot.installHolder(h.key, h.token, h.remainingMs, h.id);
        for (const replica of [standby, fromSnapshot]) {
          expect(grants(replica)).toEqual(expected);
          // Releasing each grant by its last key frees all its keys, and nothing else.
          for (const [token, keys] of expected) {
            expect(replica.release(keys.at(-1)!, token)).toBe(true);
            for (const key of keys) expect(replica.holdersOf(key).some((h) => h.token === token)).toBe(false);
          }
          expect(replica.keyCount).toBe(0);
        }
      }),
      { numRuns: 300 },
    );
  });
});
