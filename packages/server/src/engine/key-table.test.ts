import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { LockEngine } from "./engine.js";
import { KeyTable, SMALL_KEYS, shardOf } from "./key-table.js";
import { TokenIssuer } from "./token-issuer.js";

// Few keys, so that a step often concerns a key an earlier step touched.
const key = fc.oneof(
  fc.integer({ min: 0, max: 12 }).map((n) => `k:${n}`),
  fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
);

// Lookups are in the mix because they move the table's memo of where the last key is; "acquire"
// and "release" are the engine's sequences (a lookup, then an add or a delete of the same key).
const mutation = fc.oneof(
  fc.record({ op: fc.constantFrom("get" as const, "add" as const, "delete" as const), key }),
  fc.record({ op: fc.constantFrom("acquire" as const, "release" as const), key }),
  fc.record({ op: fc.constant("clear" as const) }),
);

type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

/** A value per add, so a stale value read back would show. */
interface Box {
  readonly n: number;
}

/** A copy of `text` in a new string, as a request's key is. */
const copy = (text: string) => `${text}!`.slice(0, -1);

/** Applies `step` to the table and to a plain `Map`; an add of a present key (which the engine never does) is skipped. */
function apply(table: KeyTable<Box>, model: Map<string, Box>, step: Mutation, n: number): void {
  if (step.op === "clear") {
    table.clear();
    model.clear();
    return;
  }
  const k = step.key;
  if (step.op === "get" || step.op === "acquire" || step.op === "release")
    expect(table.get(copy(k))).toBe(model.get(k));
  if (step.op === "release") expect(table.get(k)).toBe(model.get(k));
  if ((step.op === "add" || step.op === "acquire") && !model.has(k)) {
    const box = { n };
    table.add(k, box);
    model.set(k, box);
  }
  if (step.op === "delete" || step.op === "release") expect(table.delete(copy(k))).toBe(model.delete(k));
}

// How many keys the small `Map` takes: 0 (every key in a shard), a few (both), and more than any run adds.
const smallKeys = fc.constantFrom(0, 1, 7, 100, 10_000);

describe("KeyTable", () => {
  it("behaves like a Map for get, has, add, delete, size and clear", () => {
    fc.assert(
      fc.property(
        smallKeys,
        fc.array(mutation, { maxLength: 400, size: "max" }),
        fc.array(key, { maxLength: 50 }),
        (small, steps, probes) => {
          const table = new KeyTable<Box>(small);
          const model = new Map<string, Box>();
          steps.forEach((step, i) => {
            apply(table, model, step, i);
            expect(table.size).toBe(model.size);
          });
          for (const probe of [...probes, ...model.keys()]) {
            expect(table.get(probe)).toBe(model.get(probe));
            expect(table.has(probe)).toBe(model.has(probe));
          }
          expect(new Set(table.keys())).toEqual(new Set(model.keys()));
          expect(table.maps.reduce((sum, map) => sum + map.size, 0)).toBe(model.size);
        },
      ),
    );
  });

  it("visits every key present for the whole iteration exactly once, and never a key that is absent, whatever changes between steps", () => {
    fc.assert(
      fc.property(
        smallKeys,
        fc.uniqueArray(key, { maxLength: 300, size: "max" }),
        fc.array(fc.tuple(fc.nat(5), fc.array(mutation, { maxLength: 4 })), { maxLength: 200, size: "max" }),
        (small, initial, schedule) => {
          const table = new KeyTable<Box>(small);
          const model = new Map<string, Box>();
          for (const k of initial) apply(table, model, { op: "add", key: k }, 0);
          // Keys that every change so far has left alone.
          const untouched = new Set(initial);
          const visits = new Map<string, number>();
          const iterator = table.keys();
          let n = 1;
          let done = false;
          const step = () => {
            const next = iterator.next();
            if (next.done) return true;
            expect(model.has(next.value)).toBe(true);
            visits.set(next.value, (visits.get(next.value) ?? 0) + 1);
            return false;
          };
          for (const [reads, changes] of schedule) {
            for (let i = 0; i < reads && !done; i++) done = step();
            for (const change of changes) {
              if (change.op === "clear") untouched.clear();
              else if (change.op !== "get") untouched.delete(change.key);
              apply(table, model, change, n++);
            }
          }
          while (!done) done = step();
          for (const k of untouched) expect(visits.get(k)).toBe(1);
        },
      ),
    );
  });

  it("ends an iteration under way when cleared, and is empty and usable afterwards", () => {
    const table = new KeyTable<Box>(5_000);
    for (let i = 0; i < 10_000; i++) table.add(`k:${i}`, { n: i });
    expect(table.maps.filter((map) => map.size > 0).length).toBe(113);
    const keys = table.keys();
    for (let i = 0; i < 100; i++) keys.next();
    table.clear();
    expect(keys.next().done).toBe(true);
    expect(table.size).toBe(0);
    expect(table.get("k:1")).toBeUndefined();
    expect([...table.keys()]).toEqual([]);
    table.add("k:1", { n: 1 });
    expect([table.size, table.get("k:1")]).toEqual([1, { n: 1 }]);
  });

  it("puts the first keys in one Map and takes keys there again when it has room", () => {
    const table = new KeyTable<Box>(3);
    for (const k of ["a", "b", "c", "d", "e"]) table.add(k, { n: 0 });
    expect([...table.maps[0]!.keys()]).toEqual(["a", "b", "c"]);
    expect(table.delete("b")).toBe(true);
    // As the engine does: a lookup, then an add, then lookups and a delete of the same key.
    expect(table.get("f")).toBeUndefined();
    table.add("f", { n: 1 });
    expect([...table.maps[0]!.keys()]).toEqual(["a", "c", "f"]);
    expect(table.get(copy("f"))).toEqual({ n: 1 });
    expect(table.delete("f")).toBe(true);
    expect(table.get("f")).toBeUndefined();
    expect(table.get("d")).toEqual({ n: 0 });
    expect(table.delete("d")).toBe(true);
    expect(table.delete(copy("d"))).toBe(false);
    expect(table.size).toBe(3);
  });

  it("spreads the usual key shapes evenly over the shards", () => {
    const shapes: Array<(n: number) => string> = [
      (n) => `jobs:${n}`,
      (n) => `tenant:${n}:orders`,
      (n) => `k${String(n).padStart(7, "0")}`,
      (n) => `app:production:region-eu-west-1:tenant-${String(n).padStart(6, "0")}:invoice-run`,
      (n) => `\u{1f512}${n.toString(36)}`,
    ];
    for (const shape of shapes) {
      const counts = new Map<number, number>();
      for (let n = 0; n < 64_000; n++) {
        const shard = shardOf(shape(n));
        counts.set(shard, (counts.get(shard) ?? 0) + 1);
      }
      // 112 shards, about 571 keys each: a fair hash stays well inside these bounds (±6 σ).
      expect(counts.size).toBe(112);
      expect(Math.max(...counts.values())).toBeLessThan(715);
      expect(Math.min(...counts.values())).toBeGreaterThan(428);
    }
  });
});

describe("LockEngine over the key table", () => {
  // Past the small Map: some of these keys are in the shards.
  const HELD = SMALL_KEYS + 4_000;

  function setup() {
    let epoch = 1n;
    const engine = new LockEngine<string>({
      clock: new ManualClock(1_000),
      tokens: new TokenIssuer(epoch, () => ++epoch),
      events: { granted() {}, timedOut() {} },
    });
    const session = engine.openSession();
    const tokens = new Map<string, bigint>();
    const grant = (k: string) => {
      const outcome = engine.tryAcquire(k, 60_000, undefined, session);
      if (outcome.status !== "granted") throw new Error(`${k} not granted`);
      tokens.set(k, outcome.token);
    };
    return { engine, session, tokens, grant };
  }

  it("keeps holders() lazy: keys held throughout are visited once while others are granted and released", () => {
    const { engine, tokens, grant } = setup();
    for (let i = 0; i < HELD; i++) grant(`k:${i}`);
    const untouched = new Set(tokens.keys());
    const seen = new Map<string, number>();
    const holders = engine.holders();
    let added = 0;
    let seed = 7;
    const random = (below: number) => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed % below;
    };
    for (let next = holders.next(); !next.done; next = holders.next()) {
      const { key: k, token } = next.value;
      expect(tokens.get(k)).toBe(token);
      seen.set(k, (seen.get(k) ?? 0) + 1);
      // Between steps: free a random key (from the small Map or a shard; the small Map then has
      // room for the next one) and grant a new key.
      if (random(4) === 0) {
        const freed = `k:${random(HELD)}`;
        const held = tokens.get(freed);
        if (held !== undefined) expect(engine.release(freed, held)).toBe(true);
        tokens.delete(freed);
        untouched.delete(freed);
        grant(`new:${added++}`);
      }
    }
    expect(added).toBeGreaterThan(30_000);
    expect([...untouched].filter((k) => seen.get(k) !== 1)).toEqual([]);
    expect(engine.keyCount).toBe(tokens.size);
  });

  it("counts keys past the small Map, finds and frees them, and forgets them all on clear()", () => {
    const { engine, session, tokens, grant } = setup();
    for (let i = 0; i < HELD; i++) grant(`k:${i}`);
    const last = `k:${HELD - 1}`;
    engine.acquire(session, { key: last, leaseMs: 1_000, waitMs: 0, payload: "w" });
    expect([engine.keyCount, engine.waiterCount]).toEqual([HELD, 1]);
    expect(engine.holder(last)?.token).toBe(tokens.get(last));
    expect(engine.maxHeldToken()).toBe(tokens.get(last));
    expect(engine.release("k:0", tokens.get("k:0")!)).toBe(true);
    expect(engine.keyCount).toBe(HELD - 1);
    const holders = engine.holders();
    holders.next();
    engine.clear();
    expect(holders.next().done).toBe(true);
    expect([engine.keyCount, engine.waiterCount, [...engine.holders()].length]).toEqual([0, 0, 0]);
    expect(engine.holder(last)).toBeUndefined();
    expect(engine.tryAcquire(last, 1_000).status).toBe("granted");
    expect(engine.keyCount).toBe(1);
  });
});
