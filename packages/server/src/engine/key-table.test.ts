import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { LockEngine } from "./engine.js";
import { KeyTable, shardOf } from "./key-table.js";
import { TokenIssuer } from "./token-issuer.js";

const key = fc.oneof(
  fc.integer({ min: 0, max: 400 }).map((n) => `k:${n}`),
  fc.string({ unit: "binary", minLength: 1, maxLength: 6 }),
);

const mutation = fc.oneof(
  fc.record({ op: fc.constant("set" as const), key }),
  fc.record({ op: fc.constant("delete" as const), key }),
  fc.record({ op: fc.constant("clear" as const) }),
);

type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

function apply(table: KeyTable<number>, model: Map<string, number>, step: Mutation, value: number): void {
  if (step.op === "set") {
    table.set(step.key, value);
    model.set(step.key, value);
  } else if (step.op === "delete") {
    expect(table.delete(step.key)).toBe(model.delete(step.key));
  } else {
    table.clear();
    model.clear();
  }
}

describe("KeyTable", () => {
  it("behaves like a Map for get, has, set, delete, size and clear", () => {
    fc.assert(
      fc.property(
        fc.array(mutation, { maxLength: 400 }),
        fc.array(key, { maxLength: 50 }),
        (steps, probes) => {
          const table = new KeyTable<number>();
          const model = new Map<string, number>();
          steps.forEach((step, i) => {
            apply(table, model, step, i);
            expect(table.size).toBe(model.size);
          });
          for (const probe of [...probes, ...model.keys()]) {
            expect(table.get(probe)).toBe(model.get(probe));
            expect(table.has(probe)).toBe(model.has(probe));
          }
          expect(new Set(table.keys())).toEqual(new Set(model.keys()));
          expect([...table.values()].sort()).toEqual([...model.values()].sort());
        },
      ),
    );
  });

  it("visits every key present for the whole iteration exactly once, and never a key that is absent, whatever changes between steps", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(key, { maxLength: 300 }),
        fc.array(fc.tuple(fc.nat(5), fc.array(mutation, { maxLength: 4 })), { maxLength: 200 }),
        (initial, schedule) => {
          const table = new KeyTable<number>();
          const model = new Map<string, number>();
          for (const k of initial) apply(table, model, { op: "set", key: k }, 0);
          // Keys that every change so far has left alone.
          const untouched = new Set(initial);
          const visits = new Map<string, number>();
          const iterator = table.keys();
          let value = 1;
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
              else untouched.delete(change.key);
              apply(table, model, change, value++);
            }
          }
          while (!done) done = step();
          for (const k of untouched) expect(visits.get(k)).toBe(1);
        },
      ),
    );
  });

  it("ends an iteration under way when cleared, and is empty and usable afterwards", () => {
    const table = new KeyTable<number>();
    for (let i = 0; i < 10_000; i++) table.set(`k:${i}`, i);
    const values = table.values();
    for (let i = 0; i < 100; i++) values.next();
    table.clear();
    expect(values.next().done).toBe(true);
    expect(table.size).toBe(0);
    expect(table.get("k:1")).toBeUndefined();
    expect([...table.keys()]).toEqual([]);
    table.set("k:1", 1);
    expect([table.size, table.get("k:1")]).toEqual([1, 1]);
  });

  it("counts a key set twice once", () => {
    const table = new KeyTable<string>();
    table.set("a", "x");
    table.set("a", "y");
    expect([table.size, table.get("a")]).toEqual([1, "y"]);
    expect(table.delete("a")).toBe(true);
    expect(table.delete("a")).toBe(false);
    expect(table.size).toBe(0);
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
      // 256 shards, 250 keys each on average: a fair hash stays well inside these bounds.
      expect(counts.size).toBe(256);
      expect(Math.max(...counts.values())).toBeLessThan(400);
      expect(Math.min(...counts.values())).toBeGreaterThan(125);
    }
  });
});

describe("LockEngine over the sharded table", () => {
  function setup() {
    let epoch = 1n;
    return new LockEngine<string>({
      clock: new ManualClock(1_000),
      tokens: new TokenIssuer(epoch, () => ++epoch),
      events: { granted() {}, timedOut() {} },
    });
  }

  it("keeps holders() lazy: keys held throughout are visited once while others are granted and released", () => {
    const engine = setup();
    const session = engine.openSession();
    const tokens = new Map<string, bigint>();
    const grant = (k: string) => {
      const outcome = engine.tryAcquire(k, 60_000, undefined, session);
      if (outcome.status !== "granted") throw new Error(`${k} not granted`);
      tokens.set(k, outcome.token);
    };
    for (let i = 0; i < 5_000; i++) grant(`held:${i}`);
    for (let i = 0; i < 1_000; i++) grant(`churn:${i}`);
    const seen = new Map<string, number>();
    const holders = engine.holders();
    let churned = 1_000;
    for (let next = holders.next(); !next.done; next = holders.next()) {
      const { key: k, token } = next.value;
      expect(tokens.get(k)).toBe(token);
      seen.set(k, (seen.get(k) ?? 0) + 1);
      // Between every few steps: a churning key is freed and a new one granted.
      if (seen.size % 3 === 0 && churned < 4_000) {
        const freed = `churn:${churned - 1_000}`;
        expect(engine.release(freed, tokens.get(freed)!)).toBe(true);
        tokens.delete(freed);
        grant(`churn:${churned++}`);
      }
    }
    for (let i = 0; i < 5_000; i++) expect(seen.get(`held:${i}`)).toBe(1);
    expect(engine.keyCount).toBe(6_000);
  });

  it("counts keys across shards and forgets them all on clear()", () => {
    const engine = setup();
    const session = engine.openSession();
    for (let i = 0; i < 3_000; i++)
      engine.acquire(session, { key: `k:${i}`, leaseMs: 1_000, waitMs: 0, payload: "h" });
    engine.acquire(session, { key: "k:7", leaseMs: 1_000, waitMs: 0, payload: "w" });
    expect([engine.keyCount, engine.waiterCount]).toEqual([3_000, 1]);
    const holders = engine.holders();
    holders.next();
    engine.clear();
    expect(holders.next().done).toBe(true);
    expect([engine.keyCount, engine.waiterCount, [...engine.holders()].length]).toEqual([0, 0, 0]);
    expect(engine.holder("k:7")).toBeUndefined();
    expect(engine.tryAcquire("k:7", 1_000).status).toBe("granted");
    expect(engine.keyCount).toBe(1);
  });
});
