import { DeadlineHeap } from "@lock/deadline-heap";
import type { Clock } from "./clock.js";
import {
  type AcquireInput,
  type AcquireOutcome,
  DEFAULT_ENGINE_LIMITS,
  type EngineCounters,
  type EngineEvents,
  type EngineJournal,
  type EngineLimits,
  type HeldKey,
  type ListHeldInput,
  type Ownership,
  type TryAcquireOutcome,
} from "./engine-types.js";
import { HeldKeyIndex } from "./held-key-index.js";
import { KeyTable } from "./key-table.js";
import { KeyState, Session, Waiter } from "./records.js";
import { compareKeys } from "./sorted-keys.js";
import type { TokenIssuer } from "./token-issuer.js";

export type {
  AcquireInput,
  AcquireOutcome,
  EngineCounters,
  EngineEvents,
  EngineJournal,
  EngineLimits,
  HeldKey,
  ListHeldInput,
  Ownership,
  TryAcquireOutcome,
} from "./engine-types.js";
export { DEFAULT_ENGINE_LIMITS } from "./engine-types.js";

/**
 * The lock engine: a deterministic state machine. Requests come in as method calls, time comes in
 * through the `Clock`, and deferred outcomes (a queued acquire granted or timed out) go out through
 * `EngineEvents`. It opens no sockets and sets no timers: the adapter calls `tick()` when
 * `nextDeadline()` is reached.
 *
 * Ordering rules: every method runs to completion before it emits anything, and events are emitted
 * synchronously in the order the state changed. An event handler may call back into the engine.
 *
 * `P` is the adapter's payload for a queued acquire (for lockd: the connection and request),
 * handed back in `granted` / `timedOut`.
 */
export class LockEngine<P> {
  /** Held keys, split over `Map`s so that no single table grow blocks for long (see KeyTable). */
  readonly #keys = new KeyTable<KeyState<P>>();
  readonly #heap = new DeadlineHeap<KeyState<P> | Waiter<P>>();
  readonly #clock: Clock;
  readonly #tokens: TokenIssuer;
  readonly #events: EngineEvents<P>;
  readonly #journal: EngineJournal | undefined;
  readonly #limits: EngineLimits;
  #waiters = 0;
  /** Built on the first listing (see HeldKeyIndex); undefined until then. */
  #index: HeldKeyIndex | undefined;
  /** Keys with a queue: "most contended" reads these, never the whole key map. */
  readonly #contended = new Set<KeyState<P>>();
  /** On a standby, replicated leases only record their deadline; nothing expires until promotion. */
  #deferDeadlines = false;
  readonly counters: EngineCounters = {
    grants: 0,
    handoffs: 0,
    releases: 0,
    staleReleases: 0,
    extensions: 0,
    expiries: 0,
    timeouts: 0,
    cancels: 0,
  };

  constructor(options: {
    clock: Clock;
    tokens: TokenIssuer;
    events: EngineEvents<P>;
    journal?: EngineJournal;
    limits?: Partial<EngineLimits>;
  }) {
    this.#clock = options.clock;
    this.#tokens = options.tokens;
    this.#events = options.events;
    this.#journal = options.journal;
    this.#limits = { ...DEFAULT_ENGINE_LIMITS, ...options.limits };
  }

  /** Keys currently held. */
  get keyCount(): number {
    return this.#keys.size;
  }

  /** Acquires queued across all keys. */
  get waiterCount(): number {
    return this.#waiters;
  }

  get epoch(): bigint {
    return this.#tokens.epoch;
  }

  /** `label` names the session's client in listings (lockd: the connection's remote address). */
  openSession(label?: string): Session<P> {
    return new Session<P>(label);
  }

  /**
   * Drops the session's queued acquires without events (their connection is gone, or they were
   * redirected to another node). The session stays usable.
   */
  closeSession(session: Session<P>): number {
    let dropped = 0;
    for (let waiter = session.head; waiter; waiter = session.head) {
      this.#dropWaiter(waiter);
      dropped += 1;
    }
    return dropped;
  }

  acquire(session: Session<P>, input: AcquireInput<P>): AcquireOutcome<P> {
    const state = this.#keys.get(input.key);
    if (state === undefined) {
      const token = this.#grantFree(input.key, input.leaseMs, input.id, session);
      return token === undefined
        ? { status: "rejected", code: "TOO_MANY_KEYS" }
        : { status: "granted", token, replayed: false };
    }
    if (input.id !== undefined) {
      if (state.holderId === input.id) {
        // A retry on another connection (the client reconnected): that connection holds it now.
        state.holderSession = session;
        return { status: "granted", token: state.token, replayed: true };
      }
      const earlier = state.findWaiter(input.id);
      if (earlier !== undefined)
        return { status: "queued", displaced: this.#rebind(earlier, session, input) };
    }
    if (state.waiterCount >= this.#limits.maxWaitersPerKey)
      return { status: "rejected", code: "TOO_MANY_WAITERS" };
    const now = this.#clock.now();
    const waiter = new Waiter(state, session, input.payload, input.leaseMs, input.id, now);
    if (state.queue === undefined) this.#contended.add(state);
    state.enqueue(waiter);
    session.add(waiter);
    this.#waiters += 1;
    if (input.waitMs > 0) this.#heap.schedule(waiter, now + input.waitMs);
    return { status: "queued", displaced: undefined };
  }

  /** Grants only if the key is free right now; never queues. `session` becomes the holder's. */
  tryAcquire(key: string, leaseMs: number, id?: string, session?: Session<P>): TryAcquireOutcome {
    const state = this.#keys.get(key);
    if (state !== undefined) {
      if (id !== undefined && state.holderId === id) {
        state.holderSession = session;
        return { status: "granted", token: state.token, replayed: true };
      }
      return { status: "busy" };
    }
    const token = this.#grantFree(key, leaseMs, id, session);
    return token === undefined
      ? { status: "rejected", code: "TOO_MANY_KEYS" }
      : { status: "granted", token, replayed: false };
  }

  /**
   * Whether a release or extension of `key` by `token` may go ahead: "holder" when `token` holds the
   * key and the request proves it is the holder's (sent on the connection that was granted the key,
   * or carrying the acquire's request id), "not-owner" when the token holds the key but the proof is
   * missing or wrong, "stale" when the token does not hold the key. Tokens count up by one, so the
   * token alone proves nothing: anyone can guess a neighbour's.
   */
  ownership(key: string, token: bigint, session: Session<P>, id: string | undefined): Ownership {
    const state = this.#keys.get(key);
    if (state === undefined || state.token !== token) return "stale";
    if (state.holderSession === session) return "holder";
    if (id !== undefined && state.holderId === id) return "holder";
    return "not-owner";
  }

  /** Releases `key` if `token` holds it, handing it to the queue's head. False if it did not. */
  release(key: string, token: bigint): boolean {
    const state = this.#keys.get(key);
    if (state === undefined || state.token !== token) {
      this.counters.staleReleases += 1;
      return false;
    }
    this.counters.releases += 1;
    this.#journal?.free(key, token, "release");
    this.#handOff(state);
    return true;
  }

  /** Sets the lease of `token` to `leaseMs` from now. False if the token no longer holds `key`. */
  extend(key: string, token: bigint, leaseMs: number): boolean {
    const state = this.#keys.get(key);
    if (state === undefined || state.token !== token) return false;
    this.counters.extensions += 1;
    this.#heap.schedule(state, this.#clock.now() + leaseMs);
    this.#journal?.extend(key, token, leaseMs, state.holderId, state.deadline);
    return true;
  }

  /**
   * Withdraws the queued acquire `id` of `key` (the client gave up, e.g. an AbortSignal).
   * Returns its payload, or undefined if no such waiter (it may have been granted already).
   */
  cancel(key: string, id: string): P | undefined {
    const waiter = this.#keys.get(key)?.findWaiter(id);
    if (waiter === undefined) return undefined;
    this.counters.cancels += 1;
    this.#dropWaiter(waiter);
    return waiter.payload;
  }

  /** The session's queued acquires (key and id) in the order they arrived, e.g. to redirect them. */
  sessionWaiters(session: Session<P>): Array<{ key: string; id: string | undefined }> {
    const waiters: Array<{ key: string; id: string | undefined }> = [];
    // The session list is newest first.
    for (let w = session.head; w; w = w.sessionNext) waiters.push({ key: w.state.key, id: w.id });
    return waiters.reverse();
  }

  /**
   * Replication (a standby applying the active's stream): installs `token` as the holder of `key`
   * with `leaseMs` left, replacing whatever this node had. Emits nothing; queues are not replicated.
   */
  installHolder(key: string, token: bigint, leaseMs: number, id: string | undefined): void {
    let state = this.#keys.get(key);
    if (state === undefined) {
      state = new KeyState<P>(key, token, id, undefined);
      this.#keys.add(key, state);
      this.#index?.added(key);
    } else {
      state.token = token;
      state.holderId = id;
      state.holderSession = undefined;
    }
    const deadline = this.#clock.now() + leaseMs;
    if (this.#deferDeadlines) state.deadline = deadline;
    else this.#heap.schedule(state, deadline);
  }

  /**
   * A standby defers lease deadlines (they only matter once it serves, and skipping the heap halves
   * the cost of applying the stream); turning deferral off schedules every recorded deadline.
   */
  deferDeadlines(defer: boolean): void {
    if (defer === this.#deferDeadlines) return;
    this.#deferDeadlines = defer;
    if (defer) return;
    for (const map of this.#keys.maps)
      for (const state of map.values()) if (state.heapIndex < 0) this.#heap.schedule(state, state.deadline);
  }

  /**
   * Replication: forgets `key`, whatever token holds it (a release or expiry on the active). The
   * stream is ordered, so the standby's holder is the one freed; a standby that was behind is sent
   * the key's final state, and the token it holds may be older than the one the active freed.
   */
  removeHolder(key: string): void {
    const state = this.#keys.get(key);
    if (state === undefined) return;
    for (let waiter = state.head; waiter; waiter = state.head) this.#dropWaiter(waiter);
    this.#heap.remove(state);
    this.#keys.delete(key);
    this.#index?.removed(key);
  }

  /** Forgets every holder and waiter (a standby about to load a snapshot, or a demoted node). */
  clear(): void {
    for (const map of this.#keys.maps)
      for (const state of map.values()) {
        for (let waiter = state.head; waiter; waiter = state.head) this.#dropWaiter(waiter);
        this.#heap.remove(state);
      }
    this.#keys.clear();
    this.#index?.cleared();
  }

  /**
   * Every holder with its remaining lease, for a snapshot. Lazy: it may be consumed in chunks with
   * the engine changing in between. Each key held for the whole iteration is visited exactly once;
   * a key granted or freed meanwhile may or may not be (see KeyTable). A holder is read when it is
   * visited (its token and lease as of that step), and `remainingMs` is counted from the clock
   * reading taken at that step.
   */
  *holders(): Generator<{ key: string; token: bigint; remainingMs: number; id: string | undefined }> {
    for (const map of this.#keys.maps)
      for (const state of map.values()) {
        const now = this.#clock.now();
        yield {
          key: state.key,
          token: state.token,
          remainingMs: Math.max(0, Math.ceil(state.deadline - now)),
          id: state.holderId,
        };
      }
  }

  /** The largest token among current holders (0 if none): a floor for the next epoch. */
  maxHeldToken(): bigint {
    let max = 0n;
    for (const map of this.#keys.maps)
      for (const state of map.values()) if (state.token > max) max = state.token;
    return max;
  }

  /** Moves token issuing to `epoch` (promotion); the caller has persisted it. */
  moveToEpoch(epoch: bigint): void {
    this.#tokens.moveToEpoch(epoch);
  }

  /** When `tick()` next has work: the earliest lease or wait deadline, if any. */
  nextDeadline(): number | undefined {
    return this.#heap.peek()?.deadline;
  }

  /** Expires every lease and wait whose deadline has passed, in deadline order. */
  tick(): void {
    const now = this.#clock.now();
    for (let entry = this.#heap.popDue(now); entry; entry = this.#heap.popDue(now)) {
      if (entry instanceof KeyState) {
        this.counters.expiries += 1;
        this.#journal?.free(entry.key, entry.token, "expiry");
        this.#handOff(entry);
      } else {
        this.counters.timeouts += 1;
        this.#dropWaiter(entry);
        this.#events.timedOut(entry.payload, entry.state.key, entry.id);
      }
    }
  }

  /** The holder of `key`, for status and snapshots. */
  holder(key: string): { token: bigint; remainingMs: number; id: string | undefined } | undefined {
    const state = this.#keys.get(key);
    if (state === undefined) return undefined;
    return { token: state.token, remainingMs: state.deadline - this.#clock.now(), id: state.holderId };
  }

  /** Queued waiters' payloads of `key`, head first. */
  queue(key: string): P[] {
    const payloads: P[] = [];
    for (let w = this.#keys.get(key)?.head; w; w = w.next) payloads.push(w.payload);
    return payloads;
  }

  /**
   * Prepares the ordered index `listHeld` reads: the first call starts it, each call adds up to
   * `budget` keys of the initial build. True once it is complete. An adapter calls it with a
   * budget that keeps each step short, yielding to its event loop in between.
   */
  prepareListing(budget: number): boolean {
    this.#index ??= new HeldKeyIndex(this.#keys.keys(), (key) => this.#keys.has(key));
    return this.#index.build(budget);
  }

  /** Drops the ordered index (nobody lists any more): the hot path stops maintaining it. */
  stopListing(): void {
    this.#index = undefined;
  }

  /**
   * Held keys in code-point (UTF-8 byte) order, from the first after `after` that starts with
   * `prefix`, at most `limit`; `more` says whether another matching key follows. Costs
   * O(log n + limit), whatever n. Call `prepareListing` until it returns true first.
   */
  listHeld({ prefix, after, limit }: ListHeldInput): { keys: HeldKey[]; more: boolean } {
    if (this.#index === undefined || !this.#index.ready)
      throw new Error("listHeld before prepareListing completed");
    const now = this.#clock.now();
    const keys: HeldKey[] = [];
    const from = after !== undefined && compareKeys(after, prefix) >= 0 ? after : prefix;
    for (const key of this.#index.from(from, from === after)) {
      if (!key.startsWith(prefix)) break;
      if (keys.length === limit) return { keys, more: true };
      const state = this.#keys.get(key)!;
      keys.push({
        key,
        token: state.token,
        remainingMs: Math.max(0, Math.ceil(state.deadline - now)),
        waiters: state.waiterCount,
        holder: state.holderSession?.label,
      });
    }
    return { keys, more: false };
  }

  /** The `limit` keys with the most waiters, most first; reads only keys that have a queue. */
  mostContended(limit: number): Array<{ key: string; waiters: number }> {
    const top: Array<{ key: string; waiters: number }> = [];
    if (limit <= 0) return top;
    for (const state of this.#contended) {
      const waiters = state.waiterCount;
      if (top.length === limit && waiters <= top[limit - 1]!.waiters) continue;
      let at = top.length === limit ? limit - 1 : top.length;
      while (at > 0 && top[at - 1]!.waiters < waiters) at -= 1;
      top.splice(at, 0, { key: state.key, waiters });
      if (top.length > limit) top.pop();
    }
    return top;
  }

  #grantFree(
    key: string,
    leaseMs: number,
    id: string | undefined,
    session: Session<P> | undefined,
  ): bigint | undefined {
    if (this.#keys.size >= this.#limits.maxKeys) return undefined;
    const token = this.#tokens.next();
    const state = new KeyState<P>(key, token, id, session);
    this.#keys.add(key, state);
    this.#index?.added(key);
    this.#heap.schedule(state, this.#clock.now() + leaseMs);
    this.counters.grants += 1;
    this.#journal?.grant(key, token, leaseMs, id, state.deadline);
    return token;
  }

  /** The key was freed: the queue's head gets it now with a new token, or the key is forgotten. */
  #handOff(state: KeyState<P>): void {
    const next = state.head;
    if (next === undefined) {
      this.#heap.remove(state);
      this.#keys.delete(state.key);
      this.#index?.removed(state.key);
      return;
    }
    this.#dropWaiter(next);
    const token = this.#tokens.next();
    const now = this.#clock.now();
    state.token = token;
    state.holderId = next.id;
    state.holderSession = next.session;
    this.#heap.schedule(state, now + next.leaseMs);
    this.counters.grants += 1;
    this.counters.handoffs += 1;
    this.#journal?.grant(state.key, token, next.leaseMs, next.id, state.deadline);
    this.#events.granted(next.payload, state.key, token, next.id, now - next.queuedAt);
  }

  /** A retry of a queued acquire (same id) takes over the waiter: its place, new connection. */
  #rebind(waiter: Waiter<P>, session: Session<P>, input: AcquireInput<P>): P {
    const displaced = waiter.payload;
    waiter.session.remove(waiter);
    waiter.session = session;
    session.add(waiter);
    waiter.payload = input.payload;
    waiter.leaseMs = input.leaseMs;
    if (input.waitMs > 0) this.#heap.schedule(waiter, this.#clock.now() + input.waitMs);
    else this.#heap.remove(waiter);
    return displaced;
  }

  #dropWaiter(waiter: Waiter<P>): void {
    waiter.state.unlink(waiter);
    if (waiter.state.queue === undefined) this.#contended.delete(waiter.state);
    waiter.session.remove(waiter);
    this.#heap.remove(waiter);
    this.#waiters -= 1;
  }
}
