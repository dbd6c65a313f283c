import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { LockEngine } from "./engine.js";
import { EXCLUSIVE, type LockMode, permits, SHARED } from "./lock-mode.js";
import type { Session } from "./records.js";
import { TokenIssuer } from "./token-issuer.js";

/**
 * Model test of lock modes: random schedules of acquires in every mode (exclusive, shared, permits
 * of two different limits, so that kinds and limits clash), tries, releases, extensions, cancels,
 * disconnects and clock moves, checked after every step against a naive reference model (arrays,
 * linear scans) and against the rules themselves:
 * - never an exclusive holder beside any other, never shared holders beside permits, never more
 *   than N permits, and the permits' slots distinct and below N;
 * - the same holders and the same FIFO queue as the model (so phase-fair order: the queue's head
 *   and the compatible waiters right behind it are granted, nobody overtakes);
 * - every fresh token above every token before it; the same acquires time out;
 * - liveness: at the end, once every lease has run out, every acquire was granted, timed out,
 *   cancelled or dropped with its connection; none is left waiting.
 * Which of two leases ending at the same instant goes first is the heap's choice, so the model
 * does not predict slots; the slot rules are checked on the engine's own state instead.
 */

const KEYS = ["a", "b"];
const SESSIONS = 3;
const IDS = ["i1", "i2", "i3", "i4", "i5"];
const MODES: LockMode[] = [EXCLUSIVE, SHARED, permits(2), permits(3)];
const LIMITS = { maxWaitersPerKey: 4, maxSharedHolders: 3, maxKeys: 8 };

type Command =
  | {
      kind: "acquire";
      session: number;
      key: string;
      mode: number;
      leaseMs: number;
      waitMs: number;
      id?: string;
    }
  | { kind: "try"; session: number; key: string; mode: number; leaseMs: number; id?: string }
  | { kind: "release"; key: string; pick: number; stale: boolean }
  | { kind: "extend"; key: string; pick: number; leaseMs: number }
  | { kind: "cancel"; key: string; id: string }
  | { kind: "advance"; ms: number }
  | { kind: "close"; session: number };

const key = fc.constantFrom(...KEYS);
const mode = fc.integer({ min: 0, max: MODES.length - 1 });
const lease = fc.integer({ min: 1, max: 80 });
const maybeId = fc.option(fc.constantFrom(...IDS), { nil: undefined });
const session = fc.integer({ min: 0, max: SESSIONS - 1 });
const pick = fc.integer({ min: 0, max: 5 });
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("acquire" as const),
      session,
      key,
      mode,
      leaseMs: lease,
      waitMs: fc.integer({ min: 0, max: 80 }),
      id: maybeId,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("try" as const),
      session,
      key,
      mode,
      leaseMs: lease,
      id: maybeId,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("release" as const), key, pick, stale: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("extend" as const), key, pick, leaseMs: lease }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("cancel" as const), key, id: fc.constantFrom(...IDS) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 50 }) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("close" as const), session }) },
);

interface Grant {
  payload: number;
  id: string | undefined;
  mode: LockMode;
  deadline: number;
}
interface Wait extends Grant {
  session: number;
  leaseMs: number;
}
interface ModelKey {
  /** The semaphore's limit, or undefined for a lock. */
  limit: number | undefined;
  holders: Grant[];
  queue: Wait[];
}

type Arrival =
  | "granted"
  | "replayed"
  | "queued"
  | "busy"
  | "TOO_MANY_WAITERS"
  | "TOO_MANY_KEYS"
  | "KIND_MISMATCH"
  | "LIMIT_MISMATCH";

class Model {
  now = 0;
  keys = new Map<string, ModelKey>();
  timedOut: number[] = [];
  granted: number[] = [];

  get holderCount(): number {
    let n = 0;
    for (const k of this.keys.values()) n += k.holders.length;
    return n;
  }

  canHold(k: ModelKey, m: LockMode): boolean {
    if (k.holders.length === 0) return true;
    if (m.kind === "exclusive") return false;
    if (m.kind === "shared")
      return k.holders.every((h) => h.mode.kind === "shared") && k.holders.length < LIMITS.maxSharedHolders;
    return k.holders.length < m.limit;
  }

  arrive(
    c: { key: string; mode: number; leaseMs: number; id?: string | undefined },
    payload: number,
    wait: Wait | undefined,
  ): Arrival {
    const m = MODES[c.mode]!;
    let k = this.keys.get(c.key);
    if (k === undefined) {
      if (this.holderCount >= LIMITS.maxKeys) return "TOO_MANY_KEYS";
      k = { limit: m.kind === "permit" ? m.limit : undefined, holders: [], queue: [] };
      this.keys.set(c.key, k);
      this.hold(k, payload, c.id, m, c.leaseMs);
      return "granted";
    }
    if ((k.limit === undefined) !== (m.kind !== "permit")) return "KIND_MISMATCH";
    if (m.kind === "permit" && m.limit !== k.limit) return "LIMIT_MISMATCH";
    if (c.id !== undefined && k.holders.some((h) => h.id === c.id)) return "replayed";
    const earlier = c.id === undefined ? undefined : k.queue.find((w) => w.id === c.id);
    if (earlier !== undefined) {
      if (wait === undefined) return "busy";
      Object.assign(earlier, {
        payload,
        session: wait.session,
        leaseMs: wait.leaseMs,
        deadline: wait.deadline,
      });
      return "queued";
    }
    if (k.queue.length === 0 && this.canHold(k, m)) {
      if (this.holderCount >= LIMITS.maxKeys) return "TOO_MANY_KEYS";
      this.hold(k, payload, c.id, m, c.leaseMs);
      return "granted";
    }
    if (wait === undefined) return "busy";
    if (k.queue.length >= LIMITS.maxWaitersPerKey) return "TOO_MANY_WAITERS";
    k.queue.push(wait);
    return "queued";
  }

  hold(k: ModelKey, payload: number, id: string | undefined, m: LockMode, leaseMs: number): void {
    k.holders.push({ payload, id, mode: m, deadline: this.now + leaseMs });
  }

  /** The head and the compatible waiters behind it get the key. */
  grantWaiting(key: string): void {
    const k = this.keys.get(key)!;
    while (k.queue.length > 0 && this.canHold(k, k.queue[0]!.mode)) {
      const w = k.queue.shift()!;
      this.hold(k, w.payload, w.id, w.mode, w.leaseMs);
      this.granted.push(w.payload);
    }
    if (k.holders.length === 0) this.keys.delete(key);
  }

  free(key: string, payload: number): void {
    const k = this.keys.get(key)!;
    k.holders.splice(
      k.holders.findIndex((h) => h.payload === payload),
      1,
    );
    this.grantWaiting(key);
  }

  withdraw(key: string, w: Wait): void {
    const k = this.keys.get(key)!;
    const wasHead = k.queue[0] === w;
    k.queue.splice(k.queue.indexOf(w), 1);
    if (wasHead) this.grantWaiting(key);
  }

  /**
   * A connection closed: all of its queued acquires leave first, then the keys whose head left
   * grant what can hold now. Never one of the closed connection's own waiters: it is gone.
   */
  closeSession(session: number): Wait[] {
    const dropped: Wait[] = [];
    const headless: string[] = [];
    for (const [key, k] of this.keys) {
      const mine = k.queue.filter((w) => w.session === session);
      if (mine.length === 0) continue;
      if (k.queue[0]!.session === session) headless.push(key);
      k.queue = k.queue.filter((w) => w.session !== session);
      dropped.push(...mine);
    }
    for (const key of headless) this.grantWaiting(key);
    return dropped;
  }

  /** Due leases and waits, earliest first, a lease before a wait at the same instant. */
  advance(ms: number): void {
    this.now += ms;
    for (;;) {
      let next: { at: number; key: string; lease: boolean; payload: number } | undefined;
      for (const [key, k] of this.keys) {
        for (const h of k.holders)
          if (
            h.deadline <= this.now &&
            (next === undefined || h.deadline < next.at || (h.deadline === next.at && !next.lease))
          )
            next = { at: h.deadline, key, lease: true, payload: h.payload };
        for (const w of k.queue)
          if (w.deadline <= this.now && (next === undefined || w.deadline < next.at))
            next = { at: w.deadline, key, lease: false, payload: w.payload };
      }
      if (next === undefined) return;
      if (next.lease) this.free(next.key, next.payload);
      else {
        const k = this.keys.get(next.key)!;
        this.withdraw(next.key, k.queue.find((w) => w.payload === next.payload)!);
        this.timedOut.push(next.payload);
      }
    }
  }
}

function runScenario(commands: Command[]): void {
  const clock = new ManualClock(0);
  const model = new Model();
  const tokenOf = new Map<number, bigint>();
  const payloadOf = new Map<bigint, number>();
  const timedOut: number[] = [];
  let maxToken = 0n;
  const fresh = (payload: number, token: bigint) => {
    expect(token).toBeGreaterThan(maxToken);
    maxToken = token;
    tokenOf.set(payload, token);
    payloadOf.set(token, payload);
  };
  let epoch = 1n;
  const engine = new LockEngine<number>({
    clock,
    tokens: new TokenIssuer(epoch, () => ++epoch, 7),
    events: {
      granted: (payload, _k, token) => fresh(payload, token),
      timedOut: (payload) => timedOut.push(payload),
    },
    limits: LIMITS,
  });
  const sessions: Session<number>[] = Array.from({ length: SESSIONS }, () => engine.openSession());
  const pickHolder = (key: string, n: number) => {
    const holders = engine.holdersOf(key);
    return holders.length === 0 ? undefined : holders[n % holders.length]!;
  };
  let nextPayload = 1;
  const queued = new Set<number>();

  const step = (c: Command) => {
    switch (c.kind) {
      case "acquire": {
        const payload = nextPayload++;
        const waitDeadline = c.waitMs > 0 ? model.now + c.waitMs : Number.POSITIVE_INFINITY;
        const wait: Wait = {
          payload,
          id: c.id,
          mode: MODES[c.mode]!,
          deadline: waitDeadline,
          session: c.session,
          leaseMs: c.leaseMs,
        };
        const earlier =
          c.id === undefined ? undefined : model.keys.get(c.key)?.queue.find((w) => w.id === c.id);
        const displaced = earlier?.payload;
        const expected = model.arrive(c, payload, wait);
        if (expected === "queued" && displaced !== undefined) queued.delete(displaced);
        const outcome = engine.acquire(sessions[c.session]!, { ...c, mode: MODES[c.mode], payload });
        checkArrival(expected, outcome, payload);
        if (expected === "queued") queued.add(payload);
        break;
      }
      case "try": {
        const payload = nextPayload++;
        const expected = model.arrive(c, payload, undefined);
        checkArrival(
          expected,
          engine.tryAcquire(c.key, c.leaseMs, c.id, sessions[c.session], MODES[c.mode]),
          payload,
        );
        break;
      }
      case "release": {
        const holder = pickHolder(c.key, c.pick);
        const token = holder === undefined || c.stale ? maxToken + 1n : holder.token;
        expect(engine.release(c.key, token)).toBe(holder !== undefined && !c.stale);
        if (holder !== undefined && !c.stale) model.free(c.key, payloadOf.get(holder.token)!);
        break;
      }
      case "extend": {
        const holder = pickHolder(c.key, c.pick);
        if (holder === undefined) break;
        expect(engine.extend(c.key, holder.token, c.leaseMs)).toBe(true);
        const payload = payloadOf.get(holder.token)!;
        model.keys.get(c.key)!.holders.find((h) => h.payload === payload)!.deadline = model.now + c.leaseMs;
        break;
      }
      case "cancel": {
        const w = model.keys.get(c.key)?.queue.find((q) => q.id === c.id);
        expect(engine.cancel(c.key, c.id)).toBe(w?.payload);
        if (w) {
          model.withdraw(c.key, w);
          queued.delete(w.payload);
        }
        break;
      }
      case "advance":
        clock.advance(c.ms);
        engine.tick();
        model.advance(c.ms);
        break;
      case "close":
        engine.closeSession(sessions[c.session]!);
        for (const w of model.closeSession(c.session)) queued.delete(w.payload);
        sessions[c.session] = engine.openSession();
        break;
    }
  };

  const checkArrival = (
    expected: Arrival,
    outcome: { status: string; code?: string; replayed?: boolean; token?: bigint },
    payload: number,
  ) => {
    if (expected === "granted" || expected === "replayed") {
      expect(outcome).toMatchObject({ status: "granted", replayed: expected === "replayed" });
      if (expected === "granted") fresh(payload, outcome.token!);
    } else if (expected === "queued" || expected === "busy") expect(outcome.status).toBe(expected);
    else expect(outcome).toMatchObject({ status: "rejected", code: expected });
  };

  const checkAgreement = () => {
    for (const key of KEYS) {
      const m = model.keys.get(key);
      const holders = engine.holdersOf(key);
      expect(holders.map((h) => payloadOf.get(h.token)).sort()).toEqual(
        (m?.holders ?? []).map((h) => h.payload).sort(),
      );
      expect(engine.queue(key)).toEqual((m?.queue ?? []).map((w) => w.payload));
      // The rules themselves, on the engine's own state.
      if (holders.some((h) => h.mode === "exclusive")) expect(holders.length).toBe(1);
      expect(new Set(holders.map((h) => h.mode)).size).toBeLessThanOrEqual(1);
      const slots = holders.filter((h) => h.mode === "permit").map((h) => h.slot!);
      expect(new Set(slots).size).toBe(slots.length);
      if (m?.limit !== undefined) for (const slot of slots) expect(slot).toBeLessThan(m.limit);
      if (m?.limit !== undefined) expect(holders.length).toBeLessThanOrEqual(m.limit);
    }
    expect(engine.holderCount).toBe(model.holderCount);
    // Each session's count of its grants (the per-connection key quota reads it) is exact.
    for (const session of sessions)
      expect(session.heldCount).toBe(KEYS.reduce((sum, k) => sum + engine.heldBy(k, session), 0));
    expect([...timedOut].sort()).toEqual([...model.timedOut].sort());
    for (const p of timedOut) expect(tokenOf.has(p)).toBe(false);
  };

  for (const c of commands) {
    step(c);
    checkAgreement();
  }
  // Liveness: once every lease has run out, nobody is left waiting.
  for (let i = 0; i < 50 && (engine.waiterCount > 0 || engine.holderCount > 0); i += 1)
    step({ kind: "advance", ms: 100 });
  checkAgreement();
  expect(engine.waiterCount).toBe(0);
  for (const p of queued) expect(tokenOf.has(p) || timedOut.includes(p)).toBe(true);
}

describe("LockEngine lock modes against a reference model", () => {
  it("agrees on holders, phase-fair FIFO queues, kinds, limits, slots, timeouts and increasing tokens", () => {
    fc.assert(
      fc.property(fc.array(command, { minLength: 1, maxLength: 120 }), (commands) => runScenario(commands)),
      { numRuns: 400 },
    );
  });
});
