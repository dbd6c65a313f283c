import { describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { LockEngine } from "./engine.js";
import { EXCLUSIVE, permits, SHARED } from "./lock-mode.js";
import { TokenIssuer } from "./token-issuer.js";

/** `Session.heldCount`, which lockd's per-connection key quota reads, against every way a grant moves or ends. */
function setup() {
  const clock = new ManualClock(0);
  const granted: bigint[] = [];
  const engine = new LockEngine<string>({
    clock,
    tokens: new TokenIssuer(1n, () => 2n),
    events: { granted: (_p, _k, token) => granted.push(token), timedOut: () => {} },
  });
  const [a, b] = [engine.openSession(), engine.openSession()];
  return { clock, engine, granted, a, b };
}

const tokenOf = (outcome: { status: string }) => (outcome as unknown as { token: bigint }).token;

describe("a session's count of its grants", () => {
  it("follows exclusive grants, releases, hand-offs and lease expiries", () => {
    const { clock, engine, granted, a, b } = setup();
    const t1 = tokenOf(engine.acquire(a, { key: "k", leaseMs: 1000, waitMs: 0, payload: "a1" }));
    engine.acquire(a, { key: "j", leaseMs: 50, waitMs: 0, payload: "a2" });
    engine.acquire(b, { key: "k", leaseMs: 1000, waitMs: 5000, payload: "b1" });
    expect([a.heldCount, b.heldCount]).toEqual([2, 0]);
    expect(engine.heldBy("k", a)).toBe(1);
    engine.release("k", t1); // handed to b
    expect([a.heldCount, b.heldCount]).toEqual([1, 1]);
    expect(engine.heldBy("k", a)).toBe(0);
    clock.advance(100);
    engine.tick(); // j's lease ran out
    expect(a.heldCount).toBe(0);
    engine.release("k", granted[0]!);
    expect(b.heldCount).toBe(0);
  });

  it("moves with a retry of the same acquire on another session", () => {
    const { engine, a, b } = setup();
    engine.acquire(a, { key: "k", leaseMs: 1000, waitMs: 0, id: "r1", payload: "a" });
    engine.tryAcquire("s", 1000, "r2", a, SHARED);
    engine.acquire(b, { key: "k", leaseMs: 1000, waitMs: 0, id: "r1", payload: "b" });
    engine.tryAcquire("s", 1000, "r2", b, SHARED);
    expect([a.heldCount, b.heldCount]).toEqual([0, 2]);
    expect(engine.heldBy("s", b)).toBe(1);
  });

  it("counts each shared hold and permit, through hand-offs between modes", () => {
    const { engine, granted, a, b } = setup();
    const p1 = tokenOf(
      engine.acquire(a, { key: "p", leaseMs: 1000, waitMs: 0, payload: "1", mode: permits(2) }),
    );
    engine.acquire(a, { key: "p", leaseMs: 1000, waitMs: 0, payload: "2", mode: permits(2) });
    engine.acquire(b, { key: "p", leaseMs: 1000, waitMs: 5000, payload: "3", mode: permits(2) });
    expect([a.heldCount, b.heldCount, engine.heldBy("p", a)]).toEqual([2, 0, 2]);
    engine.release("p", p1);
    expect([a.heldCount, b.heldCount]).toEqual([1, 1]);
    // A writer holds, readers queue behind it; its release grants both readers at once.
    const w = tokenOf(
      engine.acquire(a, { key: "rw", leaseMs: 1000, waitMs: 0, payload: "w", mode: EXCLUSIVE }),
    );
    engine.acquire(b, { key: "rw", leaseMs: 1000, waitMs: 5000, payload: "r1", mode: SHARED });
    engine.acquire(b, { key: "rw", leaseMs: 1000, waitMs: 5000, payload: "r2", mode: SHARED });
    expect([a.heldCount, b.heldCount]).toEqual([2, 1]);
    engine.release("rw", w);
    expect([a.heldCount, b.heldCount]).toEqual([1, 3]);
    for (const token of granted.slice(1)) engine.release("rw", token);
    expect(b.heldCount).toBe(1);
  });

  it("drops to zero when the engine is cleared or a replicated holder replaces the session's", () => {
    const { engine, a } = setup();
    engine.acquire(a, { key: "k", leaseMs: 1000, waitMs: 0, payload: "1" });
    engine.acquire(a, { key: "s", leaseMs: 1000, waitMs: 0, payload: "2", mode: SHARED });
    engine.installHolder("k", 99n, 1000, "other");
    expect(a.heldCount).toBe(1);
    engine.clear();
    expect(a.heldCount).toBe(0);
  });
});
