import { HeldBundle } from "./bundle.js";
import type {
  BundleInput,
  EngineCounters,
  EngineEvents,
  EngineJournal,
  GrantedOutcome,
} from "./engine-types.js";
import { EXCLUSIVE } from "./lock-mode.js";
import { type KeyState, QueuedBundle, type Session, Waiter } from "./records.js";

/** How many recent installs a standby remembers to tie a replicated bundle's keys together. */
const INSTALL_WINDOW = 64;

/**
 * The engine's table and records as the bundle steps use them: LockEngine implements it over its
 * own state (engine.ts), so these steps keep its counts, queues and heap exact.
 */
export interface BundleHost<P> {
  now(): number;
  key(key: string): KeyState<P> | undefined;
  /** A record for a key nobody holds or waits for, added to the table (held or queued for at once). */
  addKey(key: string): KeyState<P>;
  /** `waitedMs`: how long the bundle queued (0 when granted at once), for the contention meter. */
  holdExclusive(state: KeyState<P>, token: bigint, id: string, session: Session<P>, waitedMs: number): void;
  schedule(entry: KeyState<P>, deadline: number): void;
  /** Schedules a queued acquire's wait (0: forever). */
  scheduleWait(waiter: Waiter<P>, waitMs: number): void;
  nextToken(): bigint;
  /** Appends a waiter to its key's queue and its session's list. */
  enqueue(waiter: Waiter<P>): void;
  dropWaiter(waiter: Waiter<P>): void;
  unhold(state: KeyState<P>): void;
  /** Grants the key's queue head (and whoever may join it), if it can hold the key now. */
  grantWaiting(state: KeyState<P>): void;
  /** Forgets a key with no holder and nobody queued. */
  forgetIfIdle(state: KeyState<P>): void;
  /** Whether the node serves (see LockEngine.setGranting). */
  granting(): boolean;
}

/**
 * The steps of a bundle's life in the engine (bundle.ts has the rules): its grant at once or its
 * places in every queue, its grant from the queues, its extension, its end, its withdrawal, and a
 * standby's tying of a replicated bundle's keys. Owns the granted bundles, by token.
 */
export class BundleSteps<P> {
  readonly #held = new Map<bigint, HeldBundle>();
  /**
   * The latest exclusive holders a standby installed, by token, at most INSTALL_WINDOW: a replicated
   * bundle's keys come in a row, or nearly (a snapshot's slices may let a few live changes in).
   */
  readonly #lastInstalled = new Map<bigint, string>();

  constructor(
    private readonly host: BundleHost<P>,
    private readonly events: EngineEvents<P>,
    private readonly journal: EngineJournal | undefined,
    private readonly counters: EngineCounters,
  ) {}

  /** The granted bundle `token` holds, if it is one (cheap while there are none). */
  held(token: bigint): HeldBundle | undefined {
    return this.#held.size === 0 ? undefined : this.#held.get(token);
  }

  /** Forgets bundle `token`'s tie (a standby: its keys were replaced or freed one by one). */
  untie(token: bigint): void {
    this.#held.delete(token);
  }

  clear(): void {
    this.#held.clear();
    this.#lastInstalled.clear();
  }

  /** Every key of a bundle is free with nobody queued: each is held by one new token, one lease. */
  grantNow(keys: readonly string[], input: BundleInput<P>, session: Session<P>): GrantedOutcome {
    const { host } = this;
    const token = host.nextToken();
    const deadline = host.now() + input.leaseMs;
    for (const key of keys) {
      const state = host.addKey(key);
      host.holdExclusive(state, token, input.id, session, 0);
      host.schedule(state, deadline);
      this.journal?.grant(key, token, input.leaseMs, input.id, deadline);
    }
    this.#held.set(token, new HeldBundle([...keys], token));
    this.counters.grants += 1;
    return { status: "granted", token, replayed: false, slot: undefined };
  }

  /** Joins every key's queue in this one step (a key nobody holds gets a record that only queues). */
  enqueue(
    keys: readonly string[],
    states: ReadonlyArray<KeyState<P> | undefined>,
    input: BundleInput<P>,
    session: Session<P>,
  ): void {
    const { host } = this;
    const now = host.now();
    const bundle = new QueuedBundle<P>(keys, input.id);
    for (const [i, key] of keys.entries()) {
      const state = states[i] ?? host.addKey(key);
      const waiter = new Waiter(state, session, input.payload, input.leaseMs, input.id, EXCLUSIVE, now);
      waiter.bundle = bundle;
      bundle.waiters.push(waiter);
      host.enqueue(waiter);
    }
    host.scheduleWait(bundle.first, input.waitMs);
  }

  /** A queued bundle heads all its keys' queues and they are all free: it holds them all now. */
  grantQueued(bundle: QueuedBundle<P>): void {
    const { host } = this;
    const token = host.nextToken();
    const now = host.now();
    const first = bundle.first;
    const deadline = now + first.leaseMs;
    for (const waiter of bundle.waiters) {
      host.dropWaiter(waiter);
      host.holdExclusive(waiter.state, token, bundle.id, waiter.session, now - waiter.queuedAt);
      host.schedule(waiter.state, deadline);
      this.journal?.grant(waiter.state.key, token, first.leaseMs, bundle.id, deadline);
    }
    this.#held.set(token, new HeldBundle([...bundle.keys], token));
    this.counters.grants += 1;
    this.counters.handoffs += 1;
    this.events.granted(first.payload, bundle.keys[0]!, token, bundle.id, now - first.queuedAt, undefined);
  }

  extend(bundle: HeldBundle, leaseMs: number): void {
    for (const key of bundle.keys) {
      const state = this.host.key(key)!;
      this.host.schedule(state, this.host.now() + leaseMs);
      this.journal?.extend(key, state.token, leaseMs, state.holderId, state.deadline, false);
    }
  }

  /**
   * A bundle's grant ends (released or expired): every key is let go first, then each key's queue
   * is served, so a bundle queued for the same keys finds them all free.
   */
  free(bundle: HeldBundle, cause: "release" | "expiry"): void {
    const { host } = this;
    this.#held.delete(bundle.token);
    const states = bundle.keys.map((key) => host.key(key)!);
    for (const state of states) {
      this.journal?.free(state.key, bundle.token, cause, false);
      host.unhold(state);
    }
    for (const state of states) {
      if (state.holderCount === 0) host.grantWaiting(state);
      host.forgetIfIdle(state);
    }
  }

  /**
   * A queued bundle leaves without a grant (cancelled, timed out, its connection gone) from every
   * queue at once; `then` runs once it is gone, and the keys it headed serve their next waiters.
   */
  withdraw(bundle: QueuedBundle<P>, then?: () => void): void {
    const { host } = this;
    const headed = bundle.waiters.filter((waiter) => waiter.state.head === waiter).map((w) => w.state);
    for (const waiter of bundle.waiters) host.dropWaiter(waiter);
    then?.();
    for (const state of headed)
      if (host.granting() && host.key(state.key) === state && state.holderCount === 0)
        host.grantWaiting(state);
    for (const waiter of bundle.waiters) host.forgetIfIdle(waiter.state);
  }

  /**
   * A standby installed `token` as the exclusive holder of `key`. A replicated bundle arrives as one
   * grant per key, in a row, all with its token (tokens are unique per grant, so two keys held
   * exclusively by one token are one bundle): the keys are tied together again here, so a promoted
   * standby releases, extends and expires them as one.
   */
  installed(key: string, token: bigint): void {
    const recent = this.#lastInstalled;
    const other = recent.get(token);
    recent.delete(token);
    recent.set(token, key);
    if (recent.size > INSTALL_WINDOW) recent.delete(recent.keys().next().value!);
    if (other === undefined || other === key || this.host.key(other)?.token !== token) return;
    const bundle = this.#held.get(token);
    if (bundle === undefined) this.#held.set(token, new HeldBundle([other, key], token));
    else if (!bundle.keys.includes(key)) bundle.keys.push(key);
  }
}
