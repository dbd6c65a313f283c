import { permits, type Reply, SHARED } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../engine/clock.js";
import { LockEngine } from "../engine/engine.js";
import { TokenIssuer } from "../engine/token-issuer.js";
import { WatchRegistry } from "./watch-registry.js";

function setup(limits = { maxWatchesPerConnection: 4, maxWatches: 6 }) {
  const clock = new ManualClock(1_000);
  let epoch = 1n;
  const engine = new LockEngine<string>({
    clock,
    tokens: new TokenIssuer(epoch, () => ++epoch),
    events: { granted: () => {}, timedOut: () => {} },
  });
  const registry = new WatchRegistry(engine, limits);
  const session = engine.openSession();
  const acquire = (key: string, leaseMs = 1000, id?: string) => {
    const outcome = engine.acquire(session, { key, leaseMs, waitMs: 0, payload: "p", id });
    return outcome.status === "granted" ? outcome.token : undefined;
  };
  return { clock, engine, registry, session, acquire };
}

/** A connection's watches that records what is pushed to it, as `key token mode holders` lines. */
function watcher(registry: WatchRegistry) {
  const pushed: string[] = [];
  const watches = registry.connection((reply) => pushed.push(line(reply)));
  return { watches, pushed };
}

function line(reply: Reply | string): string {
  if (typeof reply === "string") return reply;
  if (reply.kind !== "O") return `${reply.kind} ${"key" in reply ? reply.key : "-"}`;
  const mode =
    reply.mode === undefined
      ? "-"
      : reply.mode.kind === "permit"
        ? `p${reply.mode.limit}`
        : reply.mode.kind[0];
  return `${reply.key} ${reply.token} ${mode} ${reply.holders}`;
}

describe("WatchRegistry", () => {
  it("answers a watch with the current state, then pushes grant, hand-off, release and expiry", () => {
    const { clock, engine, registry, session, acquire } = setup();
    const t1 = acquire("k")!;
    const { watches, pushed } = watcher(registry);
    expect(line(watches.watch("k"))).toBe(`k ${t1} e 1`);
    engine.acquire(session, { key: "k", leaseMs: 500, waitMs: 0, payload: "w" });
    expect(pushed).toEqual([]);
    expect(engine.release("k", t1)).toBe(true);
    const t2 = t1 + 1n;
    // The hand-off to the waiter is one push: the free between is never a state of the key.
    expect(pushed).toEqual([`k ${t2} e 1`]);
    clock.advance(500);
    engine.tick();
    expect(pushed).toEqual([`k ${t2} e 1`, "k 0 - 0"]);
    acquire("k");
    expect(pushed.at(-1)).toBe(`k ${t2 + 1n} e 1`);
  });

  it("pushes only changes of the watched key, to every watcher of it", () => {
    const { engine, registry, acquire } = setup();
    const a = watcher(registry);
    const b = watcher(registry);
    a.watches.watch("k");
    b.watches.watch("k");
    a.watches.watch("other");
    const token = acquire("k")!;
    acquire("unwatched");
    engine.extend("k", token, 5000);
    expect(a.pushed).toEqual([`k ${token} e 1`]);
    expect(b.pushed).toEqual([`k ${token} e 1`]);
  });

  it("reports shared holders and permits with their count and newest token", () => {
    const { engine, registry, session } = setup();
    const { watches, pushed } = watcher(registry);
    watches.watch("r");
    watches.watch("s");
    const grant = (key: string, mode = SHARED) => {
      const outcome = engine.tryAcquire(key, 1000, undefined, session, mode);
      if (outcome.status !== "granted") throw new Error(outcome.status);
      return outcome.token;
    };
    const r1 = grant("r");
    const r2 = grant("r");
    const s1 = grant("s", permits(3));
    engine.release("r", r2);
    expect(pushed).toEqual([`r ${r1} s 1`, `r ${r2} s 2`, `s ${s1} p3 1`, `r ${r1} s 1`]);
    expect(line(watches.watch("r"))).toBe(`r ${r1} s 1`);
  });

  it("stops pushing after unwatch and end, and is idempotent", () => {
    const { registry, acquire } = setup();
    const { watches, pushed } = watcher(registry);
    watches.watch("k");
    watches.watch("k");
    expect(registry.count).toBe(1);
    expect(watches.unwatch("k")).toBe(true);
    expect(watches.unwatch("k")).toBe(false);
    watches.watch("j");
    watches.end();
    acquire("k");
    acquire("j");
    expect(pushed).toEqual([]);
    expect(registry.count).toBe(0);
  });

  it("installs the engine hook only while something is watched", () => {
    const { engine } = setup();
    const hooks: Array<unknown> = [];
    const source = {
      onHolderChange: (hook: unknown) => hooks.push(hook),
      holderSummary: (key: string) => engine.holderSummary(key),
    };
    const own = new WatchRegistry(source, { maxWatchesPerConnection: 4, maxWatches: 6 });
    const watches = own.connection(() => {});
    watches.watch("a");
    watches.watch("b");
    watches.unwatch("a");
    watches.end();
    expect(hooks.map((hook) => typeof hook)).toEqual(["function", "undefined"]);
  });

  it("ends the watches a predicate picks, pushing its reply to their watchers", () => {
    const { registry, acquire } = setup();
    const { watches, pushed } = watcher(registry);
    watches.watch("moved");
    watches.watch("kept");
    registry.endWhere((key) =>
      key === "moved" ? { kind: "M", op: "O", key, address: "10.0.0.2:7420" } : undefined,
    );
    acquire("moved");
    const token = acquire("kept");
    expect(pushed).toEqual(["M moved", `kept ${token} e 1`]);
    expect([registry.count, watches.size]).toEqual([1, 1]);
  });

  it("refuses past the per-connection and the total caps, without counting a repeat", () => {
    const { registry } = setup({ maxWatchesPerConnection: 2, maxWatches: 3 });
    const a = watcher(registry).watches;
    const b = watcher(registry).watches;
    a.watch("1");
    a.watch("2");
    expect(a.watch("3")).toBe("TOO_MANY_CONNECTION_WATCHES");
    expect(line(a.watch("2"))).toBe("2 0 - 0");
    b.watch("1");
    expect(b.watch("2")).toBe("TOO_MANY_WATCHES");
    expect([registry.count, a.size, b.size]).toEqual([3, 2, 1]);
  });
});
