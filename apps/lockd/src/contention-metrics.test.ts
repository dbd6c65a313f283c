import { SHARED } from "@lock/protocol";
import { LockEngine, TokenIssuer } from "@lock/server";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { ContentionMetrics, quantile } from "./contention-metrics.js";
import { KeyFamilies } from "./key-families.js";

/** A clock moved by hand (the engine's Clock is just `now()`). */
class FakeClock {
  #now = 0;
  now(): number {
    return this.#now;
  }
  advance(ms: number): void {
    this.#now += ms;
  }
}

/** A real engine on a fake clock, metered by ContentionMetrics into its own registry. */
function setup(limit = 100) {
  const clock = new FakeClock();
  const contention = new ContentionMetrics(new KeyFamilies([], limit), limit);
  const registry = new Registry();
  contention.register(registry);
  let epoch = 1n;
  const engine = new LockEngine<string>({
    clock,
    tokens: new TokenIssuer(epoch, () => ++epoch),
    events: { granted() {}, timedOut() {} },
    meter: contention,
  });
  return { clock, contention, registry, engine, session: engine.openSession() };
}

function grant(outcome: { status: string; token?: bigint }): bigint {
  if (outcome.token === undefined) throw new Error(`not granted: ${outcome.status}`);
  return outcome.token;
}

/** `name{labels} value` lines of the exposition, as a map. */
async function samples(registry: Registry, prefix: string): Promise<Map<string, number>> {
  const text = await registry.metrics();
  const lines = text.split("\n").filter((line) => line.startsWith(prefix));
  return new Map(lines.map((line) => [line.slice(0, line.lastIndexOf(" ")), Number(line.split(" ").at(-1))]));
}

describe("contention metrics by key family", () => {
  it("observes waits (0 on arrival, enqueue to grant on hand-off) and holds by the engine's clock", async () => {
    const { clock, registry, engine, session } = setup();
    const first = grant(
      engine.acquire(session, { key: "orders:1", leaseMs: 60_000, waitMs: 0, payload: "a" }),
    );
    engine.acquire(session, { key: "orders:1", leaseMs: 60_000, waitMs: 0, payload: "b" });
    clock.advance(7);
    engine.release("orders:1", first); // held 7 ms; the waiter waited 7 ms
    clock.advance(3_000);
    engine.release("orders:1", first + 1n); // held 3 s
    const wait = await samples(registry, "lockd_key_family_wait_seconds");
    const labels = 'family="orders:*",kind="exclusive"';
    expect(wait.get(`lockd_key_family_wait_seconds_count{${labels}}`)).toBe(2);
    expect(wait.get(`lockd_key_family_wait_seconds_sum{${labels}}`)).toBeCloseTo(0.007, 9);
    expect(wait.get(`lockd_key_family_wait_seconds_bucket{${labels},le="0.0001"}`)).toBe(1); // the 0
    expect(wait.get(`lockd_key_family_wait_seconds_bucket{${labels},le="0.005"}`)).toBe(1);
    expect(wait.get(`lockd_key_family_wait_seconds_bucket{${labels},le="0.01"}`)).toBe(2);
    const hold = await samples(registry, "lockd_key_family_hold_seconds");
    expect(hold.get(`lockd_key_family_hold_seconds_count{${labels}}`)).toBe(2);
    expect(hold.get(`lockd_key_family_hold_seconds_sum{${labels}}`)).toBeCloseTo(3.007, 9);
    expect(hold.get(`lockd_key_family_hold_seconds_bucket{${labels},le="0.01"}`)).toBe(1);
    expect(hold.get(`lockd_key_family_hold_seconds_bucket{${labels},le="2.5"}`)).toBe(1);
    expect(hold.get(`lockd_key_family_hold_seconds_bucket{${labels},le="5"}`)).toBe(2);
    expect(hold.get(`lockd_key_family_hold_seconds_bucket{${labels},le="+Inf"}`)).toBe(2);
  });

  it("gauges held by family and kind and waiting by family, back to 0 as they leave", async () => {
    const { clock, registry, engine, session } = setup();
    const writer = grant(engine.acquire(session, { key: "doc:1", leaseMs: 1_000, waitMs: 0, payload: "w" }));
    engine.acquire(session, { key: "doc:1", leaseMs: 1_000, waitMs: 0, payload: "r", mode: SHARED });
    engine.acquire(session, { key: "doc:2", leaseMs: 1_000, waitMs: 0, payload: "r", mode: SHARED });
    const before = await samples(registry, "lockd_key_family_");
    expect(before.get('lockd_key_family_held{family="doc:*",kind="exclusive"}')).toBe(1);
    expect(before.get('lockd_key_family_held{family="doc:*",kind="shared"}')).toBe(1);
    expect(before.get('lockd_key_family_waiting{family="doc:*"}')).toBe(1);
    engine.release("doc:1", writer);
    clock.advance(1_000);
    engine.tick();
    const after = await samples(registry, "lockd_key_family_");
    expect(after.get('lockd_key_family_held{family="doc:*",kind="exclusive"}')).toBe(0);
    expect(after.get('lockd_key_family_held{family="doc:*",kind="shared"}')).toBe(0);
    expect(after.get('lockd_key_family_waiting{family="doc:*"}')).toBe(0);
  });

  it("summarizes families for the status page: most waiting first, p99 from the buckets", () => {
    const { clock, contention, engine, session } = setup();
    const busy = grant(engine.acquire(session, { key: "busy:1", leaseMs: 60_000, waitMs: 0, payload: "a" }));
    engine.acquire(session, { key: "busy:1", leaseMs: 60_000, waitMs: 0, payload: "b" });
    engine.acquire(session, { key: "calm:1", leaseMs: 60_000, waitMs: 0, payload: "c" });
    engine.acquire(session, { key: "calm:2", leaseMs: 60_000, waitMs: 0, payload: "c" });
    clock.advance(40);
    engine.release("busy:1", busy);
    engine.acquire(session, { key: "busy:1", leaseMs: 60_000, waitMs: 0, payload: "d" });
    const [first, second] = contention.summary(10);
    expect(first).toMatchObject({ family: "busy:*", waiting: 1, held: 1, grants: 2 });
    expect(second).toMatchObject({ family: "calm:*", waiting: 0, held: 2, grants: 2, holdP99Ms: null });
    // One wait of 0 and one of 40 ms: the p99 falls in the 25-50 ms bucket.
    expect(first!.waitP99Ms).toBeGreaterThan(25);
    expect(first!.waitP99Ms).toBeLessThanOrEqual(50);
  });

  it("estimates a quantile as histogram_quantile does", () => {
    expect(quantile([0, 0, 0], 0.99)).toBeNull();
    // 100 values in the first bucket (0-0.1 ms): the p50 is halfway.
    expect(quantile([100, 0, 0], 0.5)).toBeCloseTo(0.05, 9);
  });
});
