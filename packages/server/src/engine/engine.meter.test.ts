import { describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { LockEngine } from "./engine.js";
import type { EngineMeter, HolderKind } from "./engine-types.js";
import { permits, SHARED } from "./lock-mode.js";
import { TokenIssuer } from "./token-issuer.js";

/** A meter that writes down every call, and keeps the counts a metrics gauge would. */
class RecordingMeter implements EngineMeter {
  readonly calls: string[] = [];
  holders = 0;
  waiters = 0;

  /** `key kind` by the slot `held` returned (the engine hands it back to `freed`). */
  readonly #slots: string[] = [];

  held(key: string, kind: HolderKind, waitedMs: number | undefined): number {
    this.holders += 1;
    this.calls.push(`held ${key} ${kind} waited=${waitedMs}`);
    return this.#slots.push(`${key} ${kind}`) - 1;
  }

  freed(slot: number, heldMs: number | undefined): void {
    this.holders -= 1;
    this.calls.push(`freed ${this.#slots[slot]} held=${heldMs}`);
  }

  queued(key: string): void {
    this.waiters += 1;
    this.calls.push(`queued ${key}`);
  }

  unqueued(key: string): void {
    this.waiters -= 1;
    this.calls.push(`unqueued ${key}`);
  }

  cleared(): void {
    this.holders = 0;
    this.waiters = 0;
    this.calls.push("cleared");
  }

  take(): string[] {
    return this.calls.splice(0);
  }
}

function setup(reusesReadings = false) {
  const clock = new ManualClock(1_000);
  const meter = Object.assign(new RecordingMeter(), { reusesReadings });
  let epoch = 1n;
  const engine = new LockEngine<string>({
    clock,
    tokens: new TokenIssuer(epoch, () => ++epoch),
    events: { granted() {}, timedOut() {} },
    meter,
  });
  return { clock, meter, engine, session: engine.openSession() };
}

function tokenOf(outcome: { status: string; token?: bigint }): bigint {
  if (outcome.token === undefined) throw new Error(`not granted: ${outcome.status}`);
  return outcome.token;
}

describe("LockEngine's meter (contention metrics)", () => {
  it("sees an immediate grant wait 0 and its hold last until the release, by the engine's clock", () => {
    const { clock, meter, engine, session } = setup();
    const token = tokenOf(
      engine.acquire(session, { key: "orders:1", leaseMs: 10_000, waitMs: 0, payload: "a" }),
    );
    clock.advance(37.5);
    engine.release("orders:1", token);
    expect(meter.take()).toEqual(["held orders:1 exclusive waited=0", "freed orders:1 exclusive held=37.5"]);
  });

  it("times a hold from its grant across extensions (the lease deadline moves, the grant time not)", () => {
    const { clock, meter, engine, session } = setup();
    const token = tokenOf(engine.acquire(session, { key: "k", leaseMs: 1_000, waitMs: 0, payload: "a" }));
    clock.advance(300);
    expect(engine.extend("k", token, 5_000)).toBe(true);
    clock.advance(500);
    engine.extend("k", token, 200);
    clock.advance(100);
    engine.release("k", token);
    expect(meter.take()).toEqual(["held k exclusive waited=0", "freed k exclusive held=900"]);
  });

  it("times a bundle's keys from their grant, across its extension", () => {
    const { clock, meter, engine, session } = setup();
    const outcome = engine.acquireAll(session, {
      keys: ["a", "b"],
      leaseMs: 1_000,
      waitMs: 0,
      id: "x",
      payload: "p",
    });
    const token = tokenOf(outcome);
    clock.advance(300);
    engine.extend("a", token, 5_000);
    clock.advance(200);
    engine.release("a", token);
    expect(meter.take()).toEqual([
      "held a exclusive waited=0",
      "held b exclusive waited=0",
      "freed a exclusive held=500",
      "freed b exclusive held=500",
    ]);
  });

  it("sees a hand-off's wait from enqueue to grant, and each holder's own hold", () => {
    const { clock, meter, engine, session } = setup();
    const first = tokenOf(engine.acquire(session, { key: "k", leaseMs: 10_000, waitMs: 0, payload: "a" }));
    clock.advance(5);
    expect(engine.acquire(session, { key: "k", leaseMs: 10_000, waitMs: 0, payload: "b" }).status).toBe(
      "queued",
    );
    clock.advance(120);
    engine.release("k", first);
    clock.advance(3);
    engine.release("k", first + 1n);
    expect(meter.take()).toEqual([
      "held k exclusive waited=0",
      "queued k",
      "freed k exclusive held=125",
      "unqueued k",
      "held k exclusive waited=120",
      "freed k exclusive held=3",
    ]);
  });

  it("sees an expiry end a hold at the lease, and a timed-out wait leave the queue unheld", () => {
    const { clock, meter, engine, session } = setup();
    engine.acquire(session, { key: "k", leaseMs: 1_000, waitMs: 0, payload: "a" });
    engine.acquire(session, { key: "k", leaseMs: 1_000, waitMs: 200, payload: "b" });
    clock.advance(200);
    engine.tick();
    clock.advance(800);
    engine.tick();
    expect(meter.take()).toEqual([
      "held k exclusive waited=0",
      "queued k",
      "unqueued k",
      "freed k exclusive held=1000",
    ]);
  });

  it("sees shared holders and permits by kind, and a queue granted to several at once", () => {
    const { clock, meter, engine, session } = setup();
    const writer = tokenOf(engine.acquire(session, { key: "doc", leaseMs: 9_000, waitMs: 0, payload: "w" }));
    engine.acquire(session, { key: "doc", leaseMs: 9_000, waitMs: 0, payload: "r1", mode: SHARED });
    engine.acquire(session, { key: "doc", leaseMs: 9_000, waitMs: 0, payload: "r2", mode: SHARED });
    engine.acquire(session, { key: "pool", leaseMs: 9_000, waitMs: 0, payload: "p", mode: permits(2) });
    clock.advance(10);
    engine.release("doc", writer);
    expect(meter.take()).toEqual([
      "held doc exclusive waited=0",
      "queued doc",
      "queued doc",
      "held pool permit waited=0",
      "freed doc exclusive held=10",
      "unqueued doc",
      "held doc shared waited=10",
      "unqueued doc",
      "held doc shared waited=10",
    ]);
  });

  it("gives no times for replicated holders, and zeroes everything on clear", () => {
    const { clock, meter, engine, session } = setup();
    engine.installHolder("r", 77n, 5_000, "id");
    clock.advance(10);
    engine.removeHolder("r", 77n);
    engine.acquire(session, { key: "k", leaseMs: 1_000, waitMs: 0, payload: "a" });
    engine.acquire(session, { key: "k", leaseMs: 1_000, waitMs: 0, payload: "b" });
    engine.clear();
    expect(meter.take()).toEqual([
      "held r exclusive waited=undefined",
      "freed r exclusive held=undefined",
      "held k exclusive waited=0",
      "queued k",
      "unqueued k",
      "cleared",
    ]);
  });

  it("with reusesReadings, times a release by the run's latest reading, and reads the clock in a new run", async () => {
    const { clock, meter, engine, session } = setup(true);
    const a = tokenOf(engine.acquire(session, { key: "a", leaseMs: 10_000, waitMs: 0, payload: "a" }));
    clock.advance(4);
    const b = tokenOf(engine.acquire(session, { key: "b", leaseMs: 10_000, waitMs: 0, payload: "b" }));
    clock.advance(2); // no reading is taken: the run's latest is b's grant, at 4
    engine.release("a", a);
    // The event loop moves on: the next run reads the clock again.
    await new Promise<void>((resolve) => setImmediate(resolve));
    clock.advance(10);
    engine.release("b", b);
    expect(meter.take()).toEqual([
      "held a exclusive waited=0",
      "held b exclusive waited=0",
      "freed a exclusive held=4",
      "freed b exclusive held=12",
    ]);
  });

  it("keeps its counts equal to the engine's through a random run of every verb", () => {
    const { clock, meter, engine } = setup();
    const sessions = [engine.openSession(), engine.openSession(), engine.openSession()];
    let seed = 12345;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const tokens: Array<[string, bigint]> = [];
    for (let step = 0; step < 5_000; step++) {
      const key = `k${random(4)}`;
      const session = sessions[random(sessions.length)]!;
      const choice = random(7);
      if (choice <= 1) {
        const mode = random(3) === 0 ? SHARED : undefined;
        const outcome = engine.acquire(session, {
          key,
          leaseMs: 50 + random(200),
          waitMs: random(100),
          id: `id${random(50)}`,
          payload: "p",
          mode,
        });
        if (outcome.status === "granted") tokens.push([key, outcome.token]);
      } else if (choice === 2 && tokens.length > 0) {
        const [heldKey, token] = tokens.splice(random(tokens.length), 1)[0]!;
        engine.release(heldKey, token);
      } else if (choice === 3) engine.cancel(key, `id${random(50)}`);
      else if (choice === 4) engine.closeSession(session);
      else if (choice === 5) {
        clock.advance(random(60));
        engine.tick();
      } else if (random(50) === 0) engine.clear();
      expect([meter.holders, meter.waiters]).toEqual([engine.holderCount, engine.waiterCount]);
    }
  });
});
