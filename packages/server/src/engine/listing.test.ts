import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { LockEngine } from "./engine.js";
import { compareKeys, SortedKeys } from "./sorted-keys.js";
import { TokenIssuer } from "./token-issuer.js";

function engine(): { engine: LockEngine<string>; clock: ManualClock } {
  const clock = new ManualClock(1_000);
  let epoch = 1n;
  return {
    clock,
    engine: new LockEngine<string>({
      clock,
      tokens: new TokenIssuer(epoch, () => ++epoch),
      events: { granted() {}, timedOut() {} },
    }),
  };
}

/** UTF-8 byte order, the order `/locks` promises. */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

function listAll(e: LockEngine<string>, prefix: string, limit: number): string[] {
  while (!e.prepareListing(3));
  const keys: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = e.listHeld({ prefix, after, limit });
    keys.push(...page.keys.map((held) => held.key));
    if (!page.more) return keys;
    after = page.keys.at(-1)!.key;
  }
}

const keyChars = fc.constantFrom("a", "b", "ab", "é", "\u{e000}", "\u{1f512}", "z", "-");
const anyKey = fc.array(keyChars, { minLength: 1, maxLength: 4 }).map((parts) => parts.join(""));

describe("SortedKeys", () => {
  it("orders by code point (UTF-8 bytes), not UTF-16 units", () => {
    const keys = ["\u{1f512}", "\u{e000}", "z", "é", "a"];
    expect([...keys].sort(compareKeys)).toEqual([...keys].sort(byteOrder));
    expect([...keys].sort(compareKeys)).not.toEqual([...keys].sort());
  });

  it("behaves like a sorted array of unique keys under any adds and deletes", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), anyKey), { maxLength: 3000 }), (ops) => {
        const set = new SortedKeys();
        const model = new Set<string>();
        for (const [add, key] of ops) {
          expect(add ? set.add(key) : set.delete(key)).toBe(add ? !model.has(key) : model.has(key));
          if (add) model.add(key);
          else model.delete(key);
        }
        expect([...set.from("", false)]).toEqual([...model].sort(byteOrder));
        expect(set.size).toBe(model.size);
      }),
    );
  });

  it("splits and merges chunks past a thousand keys", () => {
    const set = new SortedKeys();
    const keys = Array.from({ length: 5000 }, (_, i) => `k${(i * 7919) % 5000}`);
    for (const key of keys) set.add(key);
    expect([...set.from("", false)]).toEqual([...new Set(keys)].sort(byteOrder));
    for (const key of keys.slice(0, 4990)) set.delete(key);
    expect([...set.from("", false)]).toEqual(keys.slice(4990).sort(byteOrder));
    expect([...set.from("k4", true)]).toEqual(
      keys
        .slice(4990)
        .filter((k) => k > "k4")
        .sort(byteOrder),
    );
  });
});

describe("LockEngine listing", () => {
  it("pages held keys in byte order with prefix, cursor, lease, waiters and holder", () => {
    const { engine: e, clock } = engine();
    const alice = e.openSession("10.0.0.1:5000");
    for (const key of ["job:b", "job:a", "other", "job:c", "jo"])
      e.acquire(alice, { key, leaseMs: 5_000, waitMs: 0, payload: "p" });
    e.acquire(e.openSession(), { key: "job:a", leaseMs: 1_000, waitMs: 0, payload: "w" });
    e.installHolder("job:d", 99n, 2_000, "replicated");
    clock.advance(1_000);
    while (!e.prepareListing(2));
    const first = e.listHeld({ prefix: "job:", after: undefined, limit: 2 });
    const exclusive = (key: string, waiters: number) => ({
      key,
      token: expect.any(BigInt),
      remainingMs: 4_000,
      waiters,
      holder: "10.0.0.1:5000",
      mode: "exclusive",
      limit: undefined,
      holders: [{ token: expect.any(BigInt), remainingMs: 4_000, holder: "10.0.0.1:5000", slot: undefined }],
    });
    expect(first).toEqual({ keys: [exclusive("job:a", 1), exclusive("job:b", 0)], more: true });
    const second = e.listHeld({ prefix: "job:", after: "job:b", limit: 2 });
    expect(second.keys.map((k) => [k.key, k.holder])).toEqual([
      ["job:c", "10.0.0.1:5000"],
      ["job:d", undefined],
    ]);
    expect(second.more).toBe(false);
    expect(e.listHeld({ prefix: "nothing", after: undefined, limit: 10 })).toEqual({ keys: [], more: false });
    // A cursor before the prefix starts at the prefix; one past it ends the listing.
    expect(e.listHeld({ prefix: "job:", after: "a", limit: 1 }).keys[0]!.key).toBe("job:a");
    expect(e.listHeld({ prefix: "job:", after: "job:z", limit: 1 })).toEqual({ keys: [], more: false });
  });

  it("stays equal to the key map through grants, releases, expiries and replication, during and after the build", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.record({ op: fc.constant("acquire" as const), key: anyKey }),
            fc.record({ op: fc.constant("release" as const), key: anyKey }),
            fc.record({ op: fc.constant("step" as const) }),
            fc.record({ op: fc.constant("expire" as const) }),
            fc.record({ op: fc.constant("clear" as const) }),
            fc.record({ op: fc.constant("list" as const) }),
            fc.record({ op: fc.constant("install" as const), key: anyKey }),
            fc.record({ op: fc.constant("remove" as const), key: anyKey }),
          ),
          { maxLength: 300 },
        ),
        (ops) => {
          const { engine: e, clock } = engine();
          const session = e.openSession();
          const tokens = new Map<string, bigint>();
          let installs = 0;
          e.prepareListing(0);
          for (const step of ops) {
            if (step.op === "acquire") {
              const outcome = e.tryAcquire(step.key, 1_000 + tokens.size, undefined, session);
              if (outcome.status === "granted") tokens.set(step.key, outcome.token);
            } else if (step.op === "release") {
              const token = tokens.get(step.key);
              if (token !== undefined) e.release(step.key, token);
              tokens.delete(step.key);
            } else if (step.op === "install") {
              // Replication: a standby's table follows the active's stream. Each grant has a token
              // of its own: holders of one token are one bundle's keys, released together.
              const token = 1_000_000n + BigInt(++installs);
              e.installHolder(step.key, token, 1_000, undefined);
              tokens.set(step.key, token);
            } else if (step.op === "remove") {
              e.removeHolder(step.key);
              tokens.delete(step.key);
            } else if (step.op === "step") e.prepareListing(2);
            else if (step.op === "list")
              expect(listAll(e, "", 3)).toEqual([...tokens.keys()].sort(byteOrder));
            else if (step.op === "clear") {
              e.clear();
              tokens.clear();
            } else {
              clock.advance(1_001);
              e.tick();
              for (const key of [...tokens.keys()]) if (!e.holder(key)) tokens.delete(key);
            }
          }
          expect(listAll(e, "", 7)).toEqual([...tokens.keys()].sort(byteOrder));
        },
      ),
    );
  });

  it("reports the most contended keys from the keys that have queues", () => {
    const { engine: e } = engine();
    const s = e.openSession();
    for (const [key, waiters] of [
      ["a", 1],
      ["b", 3],
      ["c", 0],
      ["d", 2],
    ] as const) {
      e.acquire(s, { key, leaseMs: 1_000, waitMs: 0, payload: "h" });
      for (let i = 0; i < waiters; i++) e.acquire(s, { key, leaseMs: 1_000, waitMs: 0, payload: "w" });
    }
    expect(e.mostContended(2)).toEqual([
      { key: "b", waiters: 3 },
      { key: "d", waiters: 2 },
    ]);
    e.closeSession(s);
    expect(e.mostContended(2)).toEqual([]);
  });
});
