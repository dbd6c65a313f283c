import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { LockEngine } from "./engine.js";
import type { Session } from "./records.js";
import { TokenIssuer } from "./token-issuer.js";

/**
 * Model test: random sequences of acquire / try / release / extend / cancel / clock moves /
 * disconnects, checked step by step against a deliberately naive reference model (arrays, linear
 * scans). Checked after every step: at most one holder per key and it is the one the model expects,
 * each key's queue in FIFO order, the same acquires timed out, and every fresh token greater than
 * every token before it.
 */

const KEYS = ["a", "b", "c"];
const SESSIONS = 3;
const IDS = ["id1", "id2", "id3", "id4"];

type Command =
  | { kind: "acquire"; session: number; key: string; leaseMs: number; waitMs: number; id?: string }
  | { kind: "try"; key: string; leaseMs: number; id?: string }
  | { kind: "release"; key: string; stale: boolean }
  | { kind: "extend"; key: string; leaseMs: number; stale: boolean }
  | { kind: "cancel"; key: string; id: string }
  | { kind: "advance"; ms: number }
  | { kind: "close"; session: number };

const key = fc.constantFrom(...KEYS);
const maybeId = fc.option(fc.constantFrom(...IDS), { nil: undefined });
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("acquire" as const),
      session: fc.integer({ min: 0, max: SESSIONS - 1 }),
      key,
      leaseMs: fc.integer({ min: 1, max: 100 }),
      waitMs: fc.integer({ min: 0, max: 100 }),
      id: maybeId,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("try" as const),
      key,
      leaseMs: fc.integer({ min: 1, max: 100 }),
      id: maybeId,
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("release" as const), key, stale: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("extend" as const),
      key,
      leaseMs: fc.integer({ min: 1, max: 100 }),
      stale: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("cancel" as const), key, id: fc.constantFrom(...IDS) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 60 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("close" as const),
      session: fc.integer({ min: 0, max: SESSIONS - 1 }),
    }),
  },
);

interface ModelWaiter {
  payload: number;
  session: number;
  leaseMs: number;
  deadline: number;
  id: string | undefined;
}
interface ModelKey {
  holder: number;
  holderId: string | undefined;
  deadline: number;
  queue: ModelWaiter[];
}

class Model {
  now = 0;
  keys = new Map<string, ModelKey>();
  timedOut: number[] = [];

  acquire(c: Extract<Command, { kind: "acquire" }>, payload: number): "granted" | "replayed" | "queued" {
    const k = this.keys.get(c.key);
    if (!k) {
      this.keys.set(c.key, { holder: payload, holderId: c.id, deadline: this.now + c.leaseMs, queue: [] });
      return "granted";
    }
    if (c.id !== undefined && k.holderId === c.id) return "replayed";
    const earlier = c.id === undefined ? undefined : k.queue.find((w) => w.id === c.id);
    const deadline = c.waitMs > 0 ? this.now + c.waitMs : Number.POSITIVE_INFINITY;
    if (earlier) Object.assign(earlier, { payload, session: c.session, leaseMs: c.leaseMs, deadline });
    else k.queue.push({ payload, session: c.session, leaseMs: c.leaseMs, deadline, id: c.id });
    return "queued";
  }

  free(key: string): void {
    const k = this.keys.get(key)!;
    const next = k.queue.shift();
    if (!next) {
      this.keys.delete(key);
      return;
    }
    Object.assign(k, { holder: next.payload, holderId: next.id, deadline: this.now + next.leaseMs });
  }

  advance(ms: number): void {
    const start = this.now;
    this.now += ms;
    for (const [key, k] of [...this.keys]) {
      // Events of this key due by now, in deadline order, the lease before a wait at the same instant.
      const events: Array<{ at: number; lease: boolean; waiter?: ModelWaiter }> = [];
      if (k.deadline <= this.now) events.push({ at: k.deadline, lease: true });
      for (const w of k.queue)
        if (w.deadline <= this.now) events.push({ at: w.deadline, lease: false, waiter: w });
      events.sort((x, y) => x.at - y.at || Number(y.lease) - Number(x.lease));
      let leaseDeadline = k.deadline;
      for (const e of events) {
        const current = this.keys.get(key);
        if (e.lease) {
          if (current && leaseDeadline <= this.now && leaseDeadline === e.at) {
            this.free(key);
            leaseDeadline = this.keys.get(key)?.deadline ?? Number.POSITIVE_INFINITY;
          }
        } else if (current?.queue.includes(e.waiter!)) {
          current.queue.splice(current.queue.indexOf(e.waiter!), 1);
          this.timedOut.push(e.waiter!.payload);
        }
      }
    }
    expect(start).toBeLessThanOrEqual(this.now);
  }
}

function runScenario(commands: Command[]): void {
  const clock = new ManualClock(0);
  const model = new Model();
  const granted = new Map<number, bigint>();
  const timedOut: number[] = [];
  const holderOf = new Map<string, { payload: number; token: bigint }>();
  let maxToken = 0n;
  const noteFresh = (key: string, payload: number, token: bigint) => {
    expect(token).toBeGreaterThan(maxToken);
    maxToken = token;
    holderOf.set(key, { payload, token });
  };
  let epoch = 1n;
  const engine = new LockEngine<number>({
    clock,
    tokens: new TokenIssuer(epoch, () => ++epoch, 5),
    events: {
      granted: (payload, k, token) => {
        granted.set(payload, token);
        noteFresh(k, payload, token);
      },
      timedOut: (payload) => timedOut.push(payload),
    },
  });
  const sessions: Session<number>[] = Array.from({ length: SESSIONS }, () => engine.openSession());
  let nextPayload = 1;

  for (const c of commands) {
    switch (c.kind) {
      case "acquire": {
        const payload = nextPayload++;
        const expected = model.acquire(c, payload);
        const outcome = engine.acquire(sessions[c.session]!, { ...c, payload });
        if (expected === "queued") expect(outcome.status).toBe("queued");
        else {
          expect(outcome).toMatchObject({ status: "granted", replayed: expected === "replayed" });
          if (outcome.status === "granted" && !outcome.replayed) noteFresh(c.key, payload, outcome.token);
          if (outcome.status === "granted" && outcome.replayed)
            expect(outcome.token).toBe(holderOf.get(c.key)?.token);
        }
        break;
      }
      case "try": {
        const k = model.keys.get(c.key);
        const outcome = engine.tryAcquire(c.key, c.leaseMs, c.id);
        if (!k) {
          const payload = nextPayload++;
          model.keys.set(c.key, {
            holder: payload,
            holderId: c.id,
            deadline: model.now + c.leaseMs,
            queue: [],
          });
          expect(outcome).toMatchObject({ status: "granted", replayed: false });
          if (outcome.status === "granted") noteFresh(c.key, payload, outcome.token);
        } else if (c.id !== undefined && k.holderId === c.id) {
          expect(outcome).toMatchObject({ status: "granted", replayed: true });
        } else expect(outcome.status).toBe("busy");
        break;
      }
      case "release": {
        const holder = holderOf.get(c.key);
        const token = holder && !c.stale && model.keys.has(c.key) ? holder.token : maxToken + 1n;
        const expected = holder !== undefined && !c.stale && model.keys.has(c.key);
        expect(engine.release(c.key, token)).toBe(expected);
        if (expected) model.free(c.key);
        break;
      }
      case "extend": {
        const holder = holderOf.get(c.key);
        const expected = holder !== undefined && !c.stale && model.keys.has(c.key);
        expect(engine.extend(c.key, expected ? holder!.token : maxToken + 1n, c.leaseMs)).toBe(expected);
        if (expected) model.keys.get(c.key)!.deadline = model.now + c.leaseMs;
        break;
      }
      case "cancel": {
        const k = model.keys.get(c.key);
        const index = k ? k.queue.findIndex((w) => w.id === c.id) : -1;
        const expected = index >= 0 ? k!.queue.splice(index, 1)[0]!.payload : undefined;
        expect(engine.cancel(c.key, c.id)).toBe(expected);
        break;
      }
      case "advance":
        clock.advance(c.ms);
        engine.tick();
        model.advance(c.ms);
        break;
      case "close":
        engine.closeSession(sessions[c.session]!);
        for (const k of model.keys.values()) k.queue = k.queue.filter((w) => w.session !== c.session);
        sessions[c.session] = engine.openSession();
        break;
    }
    // The engine agrees with the model on every key: one holder, the expected one, FIFO queue.
    for (const k of KEYS) {
      const m = model.keys.get(k);
      const h = engine.holder(k);
      expect(h === undefined).toBe(m === undefined);
      if (m) {
        expect(holderOf.get(k)?.payload).toBe(m.holder);
        expect(h?.token).toBe(holderOf.get(k)?.token);
        expect(engine.queue(k)).toEqual(m.queue.map((w) => w.payload));
      }
    }
    // Each session's count of its grants (the per-connection key quota reads it) is exact.
    for (const session of sessions)
      expect(session.heldCount).toBe(KEYS.reduce((sum, k) => sum + engine.heldBy(k, session), 0));
    // Keys are independent: compare timeouts as sets (the engine interleaves keys by deadline).
    expect([...timedOut].sort()).toEqual([...model.timedOut].sort());
    for (const p of timedOut) expect(granted.has(p)).toBe(false);
  }
}

describe("LockEngine against a reference model", () => {
  it("agrees on holders, FIFO queues, timeouts and increasing tokens", () => {
    fc.assert(
      fc.property(fc.array(command, { minLength: 1, maxLength: 120 }), (commands) => runScenario(commands)),
      { numRuns: 400 },
    );
  });
});
