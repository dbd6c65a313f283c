import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { LockEngine } from "./engine.js";
import type { Session } from "./records.js";
import { TokenIssuer } from "./token-issuer.js";

/**
 * Model test of bundles (bundle.ts): random schedules of bundle acquires (1–4 keys, in any order,
 * with repeats) mixed with single-key exclusive acquires on the same keys, releases, extensions,
 * cancels, disconnects and clock moves. After every step, against the rules themselves:
 * - mutual exclusion: at most one holder per key;
 * - all-or-nothing and one token per bundle: a granted bundle holds every one of its keys under its
 *   one token, or (released, expired) none of them;
 * - FIFO per key: when a request is granted, no request that arrived before it and shares a key
 *   with it is still waiting;
 * - every fresh token is above every token before it;
 * - work-conserving: a key nobody holds has no queue, or a queue headed by a bundle that waits for
 *   another of its keys (held, or not yet at the head of that key's queue);
 * - no deadlock: once the schedule ends and every lease runs out, within a bounded time every
 *   request was granted, timed out, cancelled or dropped with its connection.
 */

const KEYS = ["a", "b", "c", "d"];
const SESSIONS = 3;
const MAX_LEASE = 60;
const MAX_WAIT = 80;

type Command =
  | { kind: "acquire"; session: number; keys: string[]; leaseMs: number; waitMs: number; bundle: boolean }
  | { kind: "release"; pick: number; key: number }
  | { kind: "extend"; pick: number; key: number; leaseMs: number }
  | { kind: "cancel"; pick: number; key: number }
  | { kind: "advance"; ms: number }
  | { kind: "close"; session: number };

const lease = fc.integer({ min: 1, max: MAX_LEASE });
const pick = fc.nat({ max: 20 });
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("acquire" as const),
      session: fc.nat({ max: SESSIONS - 1 }),
      keys: fc.array(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 4 }),
      leaseMs: lease,
      waitMs: fc.integer({ min: 0, max: MAX_WAIT }),
      bundle: fc.constant(true),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("acquire" as const),
      session: fc.nat({ max: SESSIONS - 1 }),
      keys: fc.constantFrom(...KEYS).map((k) => [k]),
      leaseMs: lease,
      waitMs: fc.integer({ min: 0, max: MAX_WAIT }),
      bundle: fc.constant(false),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("release" as const), pick, key: pick }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("extend" as const), pick, key: pick, leaseMs: lease }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("cancel" as const), pick, key: pick }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.nat({ max: 40 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("close" as const), session: fc.nat({ max: SESSIONS - 1 }) }),
  },
);

/** One acquire as the test tracks it; it is also the engine payload. */
interface Request {
  readonly seq: number;
  readonly id: string;
  readonly session: number;
  /** Sorted and de-duplicated, as the engine holds them. */
  readonly keys: string[];
  readonly bundle: boolean;
  status: "waiting" | "held" | "done";
  token: bigint;
}

class Run {
  readonly clock = new ManualClock(0);
  readonly requests: Request[] = [];
  readonly sessions: Array<Session<Request>>;
  lastToken = 0n;
  readonly engine: LockEngine<Request>;

  constructor() {
    this.engine = new LockEngine<Request>({
      clock: this.clock,
      tokens: new TokenIssuer(1n, () => 2n),
      limits: { maxWaitersPerKey: 6 },
      events: {
        granted: (request, _key, token) => this.granted(request, token),
        timedOut: (request) => {
          expect(request.status).toBe("waiting");
          request.status = "done";
        },
      },
    });
    this.sessions = Array.from({ length: SESSIONS }, () => this.engine.openSession());
  }

  granted(request: Request, token: bigint): void {
    expect(request.status).toBe("waiting");
    expect(token).toBeGreaterThan(this.lastToken);
    this.lastToken = token;
    // FIFO per key: nobody who arrived earlier and wants one of these keys is still waiting.
    for (const other of this.requests)
      if (other.status === "waiting" && other !== request && other.keys.some((k) => request.keys.includes(k)))
        expect(other.seq, `${request.id} granted before ${other.id}`).toBeGreaterThan(request.seq);
    request.status = "held";
    request.token = token;
  }

  waiting(pick: number): Request | undefined {
    const waiting = this.requests.filter((r) => r.status === "waiting");
    return waiting[pick % Math.max(1, waiting.length)];
  }

  held(pick: number): Request | undefined {
    const held = this.requests.filter((r) => r.status === "held");
    return held[pick % Math.max(1, held.length)];
  }

  run(c: Command): void {
    switch (c.kind) {
      case "acquire":
        this.acquire(c);
        return;
      case "release": {
        const request = this.held(c.pick);
        if (request === undefined) return;
        expect(this.engine.release(request.keys[c.key % request.keys.length]!, request.token)).toBe(true);
        request.status = "done";
        return;
      }
      case "extend": {
        const request = this.held(c.pick);
        if (request === undefined) return;
        expect(this.engine.extend(request.keys[c.key % request.keys.length]!, request.token, c.leaseMs)).toBe(
          true,
        );
        for (const key of request.keys) expect(this.engine.holdersOf(key)[0]!.remainingMs).toBe(c.leaseMs);
        return;
      }
      case "cancel": {
        const request = this.waiting(c.pick);
        if (request === undefined) return;
        // Done once out of the queue, before whoever it let through is granted.
        const done = (payload: Request) => {
          payload.status = "done";
        };
        expect(this.engine.cancel(request.keys[c.key % request.keys.length]!, request.id, done)).toBe(
          request,
        );
        expect(request.status).toBe("done");
        return;
      }
      case "advance":
        this.advance(c.ms);
        return;
      case "close":
        for (const r of this.requests)
          if (r.session === c.session && r.status === "waiting") r.status = "done";
        this.engine.closeSession(this.sessions[c.session]!);
    }
  }

  acquire(c: Extract<Command, { kind: "acquire" }>): void {
    const seq = this.requests.length;
    const keys = [...new Set(c.keys)].sort();
    const request: Request = {
      seq,
      id: `r${seq}`,
      session: c.session,
      keys,
      bundle: c.bundle,
      status: "waiting",
      token: 0n,
    };
    this.requests.push(request);
    const session = this.sessions[c.session]!;
    const input = { leaseMs: c.leaseMs, waitMs: c.waitMs, id: request.id, payload: request };
    const outcome = c.bundle
      ? this.engine.acquireAll(session, { ...input, keys: c.keys })
      : this.engine.acquire(session, { ...input, key: keys[0]! });
    if (outcome.status === "granted") this.granted(request, outcome.token);
    else if (outcome.status === "rejected") {
      expect(outcome.code).toBe("TOO_MANY_WAITERS");
      request.status = "done";
    } else if ("keys" in outcome) expect(outcome.keys).toEqual(keys);
  }

  /** One millisecond at a time, as lockd's timer would. */
  advance(ms: number): void {
    for (let i = 0; i < ms; i++) {
      this.clock.advance(1);
      this.engine.tick();
      this.settle();
    }
  }

  /** Marks grants whose leases ran out as done (the engine emits nothing for an expiry). */
  settle(): void {
    for (const r of this.requests) {
      if (r.status !== "held") continue;
      const holding = r.keys.filter((k) => this.engine.holdersOf(k).some((h) => h.token === r.token));
      // All-or-nothing: a bundle holds every key or none.
      expect(holding.length === 0 || holding.length === r.keys.length, `${r.id} holds ${holding}`).toBe(true);
      if (holding.length === 0) r.status = "done";
    }
  }

  check(): void {
    this.settle();
    const heads = new Map<string, Request | undefined>();
    for (const key of KEYS) heads.set(key, this.engine.queue(key)[0]);
    for (const key of KEYS) {
      const holders = this.engine.holdersOf(key);
      expect(holders.length).toBeLessThanOrEqual(1);
      const holder = holders[0];
      if (holder !== undefined) {
        const owner = this.requests.find((r) => r.status === "held" && r.token === holder.token);
        expect(owner?.keys).toContain(key);
      }
      const head = heads.get(key);
      if (holder !== undefined || head === undefined) continue;
      // Work-conserving: a free key waits only for a bundle that waits for another of its keys.
      expect(head.bundle, `free key ${key} headed by ${head.id}`).toBe(true);
      const blocked = head.keys.some((k) => this.engine.holdersOf(k).length > 0 || heads.get(k) !== head);
      expect(blocked, `${head.id} could be granted`).toBe(true);
    }
    const queued = this.requests.filter((r) => r.status === "waiting");
    expect(this.engine.waiterCount).toBe(queued.reduce((n, r) => n + r.keys.length, 0));
    // Held keys only: not a free key a waiting bundle queues on.
    expect(this.engine.keyCount).toBe(KEYS.filter((key) => this.engine.holdersOf(key).length > 0).length);
  }
}

describe("bundles: engine model", () => {
  it("no deadlock, all-or-nothing, FIFO per key, one rising token per bundle", () => {
    fc.assert(
      fc.property(fc.array(command, { minLength: 1, maxLength: 60 }), (commands) => {
        const run = new Run();
        for (const c of commands) {
          run.run(c);
          run.check();
        }
        // Liveness: with no more requests, every lease ends and each grant is followed by another,
        // so within one lease per request plus the longest wait every request is settled.
        run.advance(run.requests.length * MAX_LEASE + MAX_WAIT + 1);
        run.check();
        expect(run.requests.filter((r) => r.status === "waiting").map((r) => r.id)).toEqual([]);
        expect(run.engine.waiterCount).toBe(0);
        expect(run.engine.keyCount).toBe(0);
      }),
      { numRuns: 400 },
    );
  });
});
