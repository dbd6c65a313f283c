import { DeadlineHeap } from "@lock/deadline-heap";
import { bundleKeys, refusesBundle } from "./bundle.js";
import { type BundleHost, BundleSteps } from "./bundle-steps.js";
import type { Clock } from "./clock.js";
import {
  type AcquireInput,
  type AcquireOutcome,
  type BundleInput,
  type BundleOutcome,
  DEFAULT_ENGINE_LIMITS,
  type EngineCounters,
  type EngineEvents,
  type EngineJournal,
  type EngineLimits,
  type EngineMeter,
  type GrantedOutcome,
  type HeldKey,
  type HolderKind,
  type ListHeldInput,
  type Ownership,
  type Rejected,
  type TryAcquireOutcome,
} from "./engine-types.js";
import { HeldListing, mostContended } from "./held-listing.js";
import { type HolderSummary, summarize } from "./holder-summary.js";
import { KeyTable } from "./key-table.js";
import {
  canHoldBeside,
  EXCLUSIVE,
  type HoldRule,
  type LockMode,
  modeConflict,
  permits,
  SHARED,
} from "./lock-mode.js";
import { RecentReading } from "./recent-reading.js";
import {
  grantLead,
  type HeldRecord,
  Holder,
  KeyState,
  LEAD_PENDING,
  NO_TOKEN,
  NOT_GRANTED_HERE,
  Session,
  slotOf,
  Waiter,
} from "./records.js";
import type { SemaphoreRules } from "./semaphore-rules.js";
import type { TokenIssuer } from "./token-issuer.js";

export type {
  AcquireInput,
  AcquireOutcome,
  BundleInput,
  BundleOutcome,
  EngineCounters,
  EngineEvents,
  EngineJournal,
  EngineLimits,
  EngineMeter,
  HeldKey,
  HolderKind,
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
  readonly #heap = new DeadlineHeap<KeyState<P> | Holder<P> | Waiter<P>>();
  readonly #clock: Clock;
  readonly #tokens: TokenIssuer;
  readonly #events: EngineEvents<P>;
  readonly #journal: EngineJournal | undefined;
  /** Contention metrics (lockd's key families); undefined costs one branch per change. */
  readonly #meter: EngineMeter | undefined;
  /** The meter's clock: reuses a run's latest reading (see RecentReading); set with `#meter`. */
  readonly #meterClock: RecentReading | undefined;
  readonly #limits: EngineLimits;
  /** Which holds may share a key (lock-mode.ts); the simulator's negative control swaps in a wrong one. */
  readonly #holdRule: HoldRule;
  /** The simulator's negative control: a bundle is one acquire per key (a client-side loop). */
  readonly #bundleKeyByKey: boolean;
  /** Configured semaphores by key pattern (`--semaphores`); undefined when there are none. */
  readonly #semaphores: SemaphoreRules | undefined;
  #waiters = 0;
  /** Grants that hold a key: exclusive holders, shared holders and permits (`maxKeys` caps them). */
  #holders = 0;
  /** Keys whose deadlines were deferred and are not scheduled yet (`scheduleDeferred`). */
  #deferred: Iterator<KeyState<P>> | undefined;
  /** Keys a sliced clear (`clearSome`) has still to visit; undefined when none is under way. */
  #clearing: Iterator<KeyState<P>> | undefined;
  /** The largest token held since the last `clear()` (maxHeldToken). */
  #maxToken = 0n;
  /** The ordered view `/locks` pages through (built on the first listing). */
  readonly #listing = new HeldListing<P>(this.#keys);
  /** Keys with a queue: "most contended" reads these, never the whole key map. */
  readonly #contended = new Set<KeyState<P>>();
  /**
   * Told the key after every change of its holders (`onHolderChange`); undefined while nobody
   * watches, which costs one check per grant and per free.
   */
  #holderChanged: ((key: string) => void) | undefined = undefined;
  /** Granted bundles by their token (bundle.ts); each key's own record holds the token too. */
  readonly #bundles: BundleSteps<P>;
  /** On a standby, replicated leases only record their deadline; nothing expires until promotion. */
  #deferDeadlines = false;
  /** False while the node does not serve (a standby, a handoff, a hold): see `setGranting`. */
  #granting = true;
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
    meter?: EngineMeter;
    limits?: Partial<EngineLimits>;
    semaphores?: SemaphoreRules;
    /** @internal Only for the simulator's negative control (a rule with a bug on purpose). */
    holdRule?: HoldRule;
    /** @internal Only for the simulator's negative control: bundles taken key by key, a grant each. */
    bundleKeyByKey?: boolean;
  }) {
    this.#bundleKeyByKey = options.bundleKeyByKey === true;
    this.#holdRule = options.holdRule ?? canHoldBeside;
    this.#semaphores = options.semaphores?.size ? options.semaphores : undefined;
    this.#clock = options.clock;
    this.#tokens = options.tokens;
    this.#events = options.events;
    this.#journal = options.journal;
    this.#meter = options.meter;
    this.#meterClock =
      options.meter && new RecentReading(options.clock, options.meter.reusesReadings === true);
    this.#limits = { ...DEFAULT_ENGINE_LIMITS, ...options.limits };
    this.#bundles = new BundleSteps<P>(this.#bundleHost(), this.#events, this.#journal, this.counters);
  }

  /** The engine's state as the bundle steps (bundle-steps.ts) change it. */
  #bundleHost(): BundleHost<P> {
    return {
      now: () => this.#clock.now(),
      key: (key) => this.#keys.get(key),
      addKey: (key) => {
        const state = new KeyState<P>(key, NO_TOKEN, undefined, undefined);
        this.#keys.add(key, state);
        this.#listing.added(key);
        return state;
      },
      holdExclusive: (state, token, id, session, waitedMs) => {
        this.#hold(state, EXCLUSIVE, token, id, session, -1, waitedMs);
        this.#holderChanged?.(state.key);
      },
      schedule: (state, deadline) => {
        // A metered key's grant lead moves with its deadline; a new grant's is set here.
        const lead = state.grantLead;
        if (lead === LEAD_PENDING) state.grantLead = grantLead(deadline - this.#meterClock!.now());
        else if (lead !== NOT_GRANTED_HERE) state.grantLead = grantLead(lead + deadline - state.deadline);
        this.#heap.schedule(state, deadline);
      },
      scheduleWait: (waiter, waitMs) => this.#scheduleWait(waiter, waitMs),
      nextToken: () => this.#nextToken(),
      enqueue: (waiter) => this.#enqueue(waiter),
      dropWaiter: (waiter) => this.#dropWaiter(waiter),
      unhold: (state) => {
        this.#unhold(state);
        this.#holderChanged?.(state.key);
      },
      grantWaiting: (state) => this.#grantWaiting(state),
      forgetIfIdle: (state) => this.#forgetIfIdle(state),
      granting: () => this.#granting,
    };
  }

  /**
   * Calls `hook` with the key after every grant and every end of a grant (release, expiry) the engine
   * makes, once the change is in place; undefined stops it. A release that hands the key on may call it
   * more than once (the grant, then the free): callers compare `holderSummary`. Not for replicated
   * holders (`installHolder`, `removeHolder`): a standby serves no watches.
   */
  onHolderChange(hook: ((key: string) => void) | undefined): void {
    this.#holderChanged = hook;
  }

  /** The key's holders as a watcher sees them (holder-summary.ts). */
  holderSummary(key: string): HolderSummary {
    return summarize(this.#keys.get(key));
  }

  /**
   * Keys currently held. A free key that a waiting bundle queues on (its other keys are not all
   * free yet) has a record but no holder: not counted. Such a key always has waiters, so the
   * contended keys are all there is to look at (I, /metrics and the status page ask, not grants).
   */
  get keyCount(): number {
    let queuedOnly = 0;
    for (const state of this.#contended) if (state.holderCount === 0) queuedOnly += 1;
    return this.#keys.size - queuedOnly;
  }

  /** Holders across all keys: one per exclusively held key, one per shared holder and permit. */
  get holderCount(): number {
    return this.#holders;
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
      this.#withdraw(waiter);
      dropped += 1;
    }
    return dropped;
  }

  acquire(session: Session<P>, input: AcquireInput<P>): AcquireOutcome<P> {
    const mode = input.mode ?? EXCLUSIVE;
    const state = this.#keys.get(input.key);
    if (state === undefined) return this.#grantFirst(input.key, mode, input.leaseMs, input.id, session);
    const conflict = modeConflict(mode, state.semaphoreLimit);
    if (conflict !== undefined) return { status: "rejected", ...conflict };
    if (input.id !== undefined) {
      const held = this.#findById(state, input.id);
      if (held !== undefined) return this.#replay(held, session);
      const earlier = state.findWaiter(input.id);
      if (earlier !== undefined && earlier.bundle === undefined)
        return { status: "queued", displaced: this.#rebind(earlier, session, input) };
    }
    if (
      state.waiterCount === 0 &&
      this.#holdRule(mode, state.holding, state.holderCount, this.#limits.maxSharedHolders)
    )
      return this.#grantArrival(state, mode, input.leaseMs, input.id, session);
    if (state.waiterCount >= this.#limits.maxWaitersPerKey)
      return { status: "rejected", code: "TOO_MANY_WAITERS" };
    const now = this.#clock.now();
    const waiter = new Waiter(state, session, input.payload, input.leaseMs, input.id, mode, now);
    this.#enqueue(waiter);
    if (input.waitMs > 0) this.#heap.schedule(waiter, now + input.waitMs);
    return { status: "queued", displaced: undefined };
  }

  /**
   * Grants only if the request could be granted right now (the key free, or holdable beside its
   * holders with nobody queued); never queues. `session` becomes the holder's.
   */
  tryAcquire(
    key: string,
    leaseMs: number,
    id?: string,
    session?: Session<P>,
    mode: LockMode = EXCLUSIVE,
  ): TryAcquireOutcome {
    const state = this.#keys.get(key);
    if (state === undefined) return this.#grantFirst(key, mode, leaseMs, id, session);
    const conflict = modeConflict(mode, state.semaphoreLimit);
    if (conflict !== undefined) return { status: "rejected", ...conflict };
    if (id !== undefined) {
      const held = this.#findById(state, id);
      if (held !== undefined) return this.#replay(held, session);
    }
    if (
      state.waiterCount === 0 &&
      this.#holdRule(mode, state.holding, state.holderCount, this.#limits.maxSharedHolders)
    )
      return this.#grantArrival(state, mode, leaseMs, id, session);
    return { status: "busy" };
  }

  /**
   * A bundle (bundle.ts): every key exclusively under one token and one lease, granted at once if
   * every key is free with nobody queued, else queued into every key's queue in this one step.
   * A retry with the same id gets the bundle's grant back, or takes over its queued places.
   */
  acquireAll(session: Session<P>, input: BundleInput<P>): BundleOutcome<P> {
    const keys = bundleKeys(input.keys);
    if (keys.length > this.#limits.maxBundleKeys) return { status: "rejected", code: "TOO_MANY_BUNDLE_KEYS" };
    if (this.#bundleKeyByKey) {
      const outcomes = keys.map((key) => this.acquire(session, { ...input, key }));
      return { ...outcomes[0]!, keys } as BundleOutcome<P>;
    }
    const first = this.#keys.get(keys[0]!);
    const held = first === undefined ? undefined : this.#bundles.held(first.token);
    if (held !== undefined && first!.holderId === input.id) {
      for (const key of held.keys) this.#replay(this.#keys.get(key)!, session);
      return { status: "granted", token: held.token, replayed: true, slot: undefined, keys: held.keys };
    }
    const earlier = first?.findWaiter(input.id)?.bundle;
    if (earlier !== undefined) {
      const displaced = earlier.rebind(session, input.payload, input.leaseMs);
      this.#scheduleWait(earlier.first, input.waitMs);
      return { status: "queued", displaced, keys: earlier.keys };
    }
    const states = keys.map((key) => this.#keys.get(key));
    let free = true;
    for (const [i, state] of states.entries()) {
      const current = state === undefined ? this.#semaphoreKind(keys[i]!) : refusesBundle(state);
      if (current !== undefined) return { status: "rejected", code: "KIND_MISMATCH", current };
      if (state === undefined) continue;
      free = false;
      if (state.waiterCount >= this.#limits.maxWaitersPerKey)
        return { status: "rejected", code: "TOO_MANY_WAITERS" };
    }
    if (this.#holders + keys.length > this.#limits.maxKeys)
      return { status: "rejected", code: "TOO_MANY_KEYS" };
    if (free) return { ...this.#bundles.grantNow(keys, input, session), keys };
    this.#bundles.enqueue(keys, states, input, session);
    return { status: "queued", displaced: undefined, keys };
  }

  /**
   * Whether a release or extension of `key` by `token` may go ahead: "holder" when `token` holds the
   * key and the request proves it is the holder's (sent on the connection that was granted the key,
   * or carrying the acquire's request id), "not-owner" when the token holds the key but the proof is
   * missing or wrong, "stale" when the token does not hold the key. Tokens count up by one, so the
   * token alone proves nothing: anyone can guess a neighbour's.
   */
  ownership(key: string, token: bigint, session: Session<P>, id: string | undefined): Ownership {
    const held = this.#find(key, token);
    if (held === undefined) return "stale";
    if (held.holderSession === session) return "holder";
    if (id !== undefined && held.holderId === id) return "holder";
    return "not-owner";
  }

  /** How many grants of `key` `session` holds (as `ownership` counts a holder by its session). */
  heldBy(key: string, session: Session<P>): number {
    const state = this.#keys.get(key);
    if (state === undefined) return 0;
    let count = state.token !== NO_TOKEN && state.holderSession === session ? 1 : 0;
    for (const holder of state.holders?.values() ?? []) if (holder.holderSession === session) count += 1;
    return count;
  }

  /**
   * Releases the grant `token` of `key` if it still holds it, granting the queue's head (and, for
   * shared holders and permits, every waiter behind it that can join them). False if it did not.
   */
  release(key: string, token: bigint): boolean {
    const state = this.#keys.get(key);
    if (state !== undefined && state.token === token && token !== NO_TOKEN) {
      // An exclusive holder: the common case, without the lookups a shared holder needs.
      this.counters.releases += 1;
      const bundle = this.#bundles.held(token);
      if (bundle !== undefined) {
        this.#bundles.free(bundle, "release");
        return true;
      }
      this.#journal?.free(key, token, "release", false);
      this.#freeExclusive(state);
      this.#holderChanged?.(key);
      return true;
    }
    const held = state?.holders?.get(token);
    if (held === undefined) {
      this.counters.staleReleases += 1;
      return false;
    }
    this.counters.releases += 1;
    this.#journal?.free(key, token, "release", held instanceof Holder);
    this.#free(held);
    this.#holderChanged?.(key);
    return true;
  }

  /** Sets the lease of `token` to `leaseMs` from now. False if the token no longer holds `key`. */
  extend(key: string, token: bigint, leaseMs: number): boolean {
    const held = this.#find(key, token);
    if (held === undefined) return false;
    this.counters.extensions += 1;
    const bundle = this.#bundles.held(token);
    if (bundle !== undefined) {
      this.#bundles.extend(bundle, leaseMs);
      return true;
    }
    const deadline = this.#clock.now() + leaseMs;
    if (held.grantLead !== NOT_GRANTED_HERE)
      held.grantLead = grantLead(held.grantLead + deadline - held.deadline);
    this.#heap.schedule(held, deadline);
    this.#journal?.extend(key, token, leaseMs, held.holderId, held.deadline, held instanceof Holder);
    return true;
  }

  /**
   * Withdraws the queued acquire `id` of `key` (the client gave up, e.g. an AbortSignal).
   * Returns its payload, or undefined if no such waiter (it may have been granted already).
   * `withdrawn` runs with the payload once it is out of the queue, before the waiters behind it
   * that may now hold the key are granted: events keep the order of the changes.
   */
  cancel(key: string, id: string, withdrawn?: (payload: P) => void): P | undefined {
    const waiter = this.#keys.get(key)?.findWaiter(id);
    if (waiter === undefined) return undefined;
    this.counters.cancels += 1;
    if (waiter.bundle !== undefined)
      this.#bundles.withdraw(waiter.bundle, withdrawn && (() => withdrawn(waiter.payload)));
    else this.#withdraw(waiter, withdrawn && (() => withdrawn(waiter.payload)));
    return waiter.payload;
  }

  /**
   * Withdraws every queued acquire of `key`, newest first so that none is granted meanwhile (its
   * slot is moving to another cluster: docs/protocol.md, "Key slots"). `withdrawn` gets each one's
   * payload and id. Returns how many there were.
   */
  withdrawQueue(key: string, withdrawn: (payload: P, id: string | undefined) => void): number {
    const state = this.#keys.get(key);
    if (state === undefined) return 0;
    let count = 0;
    for (let waiter = state.more?.tail; waiter; waiter = state.more?.tail) {
      // A bundle's keys share its slot (slot-gate), so its other keys are leaving as well.
      for (const other of waiter.bundle?.waiters ?? [waiter]) this.#dropWaiter(other);
      for (const other of waiter.bundle?.waiters ?? [])
        if (other.state !== state) this.#forgetIfIdle(other.state);
      this.counters.cancels += 1;
      count += 1;
      withdrawn(waiter.payload, waiter.id);
    }
    if (state.holderCount === 0 && this.#keys.get(key) === state) this.#forget(state);
    return count;
  }

  /** Whether `key` has a holder of any mode (cheaper than `holdersOf` when polled). */
  isHeld(key: string): boolean {
    return (this.#keys.get(key)?.holderCount ?? 0) > 0;
  }

  /** The session's queued acquires (key and id) in the order they arrived, e.g. to redirect them. */
  sessionWaiters(session: Session<P>): Array<{ key: string; id: string | undefined }> {
    const waiters: Array<{ key: string; id: string | undefined }> = [];
    // The session list is newest first.
    for (let w = session.head; w; w = w.sessionNext)
      if (w.bundle === undefined || w.bundle.first === w) waiters.push({ key: w.state.key, id: w.id });
    return waiters.reverse();
  }

  /**
   * Replication (a standby applying the active's stream): installs `token` as a holder of `key` in
   * `mode` (a permit on `slot`) with `leaseMs` left. An exclusive holder replaces whatever this
   * node had for the key; a shared holder or permit joins the key's others (replacing them if they
   * were another kind, and a permit already on its slot). Emits nothing; queues are not replicated.
   */
  installHolder(
    key: string,
    token: bigint,
    leaseMs: number,
    id: string | undefined,
    mode: LockMode = EXCLUSIVE,
    slot = -1,
  ): void {
    let state = this.#keys.get(key);
    if (state === undefined) {
      state = new KeyState<P>(key, NO_TOKEN, undefined, undefined);
      this.#keys.add(key, state);
      this.#listing.added(key);
    }
    const held = this.#replaceForInstall(state, token, mode, slot);
    const record = held ?? this.#hold(state, mode, token, id, undefined, slot, undefined);
    if (mode.kind === "exclusive") this.#bundles.installed(key, token);
    record.holderId = id;
    const deadline = this.#clock.now() + leaseMs;
    if (this.#deferDeadlines) record.deadline = deadline;
    else this.#heap.schedule(record, deadline);
  }

  /**
   * Makes room for an installed holder: drops the holders it cannot sit beside. Returns the record
   * to update if `token` already holds the key the same way.
   */
  #replaceForInstall(
    state: KeyState<P>,
    token: bigint,
    mode: LockMode,
    slot: number,
  ): HeldRecord<P> | undefined {
    if (mode.kind === "exclusive") {
      if (state.token === NO_TOKEN) this.#dropHolderSet(state);
      else {
        if (state.token !== token) this.#bundles.untie(state.token);
        this.#unhold(state);
      }
      return undefined;
    }
    this.#dropExclusive(state);
    const holders = state.holders;
    if (holders !== undefined && (holders.kind !== mode.kind || holders.limit !== limitOf(mode)))
      this.#dropHolderSet(state);
    const same = state.holders?.get(token);
    if (same !== undefined && same.slot === slot) return same;
    if (same !== undefined) this.#unhold(same);
    if (mode.kind === "permit") {
      for (const other of state.holders?.values() ?? []) if (other.slot === slot) this.#unhold(other);
    }
    return undefined;
  }

  /**
   * Replication: the holder `token` of `key` was extended to `leaseMs` from now. A key held
   * exclusively by another token (a standby that missed a change) takes `token` as its holder,
   * keeping the holder's id, as does a key this node does not have; a key of shared holders or
   * permits without `token` is left alone.
   */
  installExtension(key: string, token: bigint, leaseMs: number): void {
    const state = this.#keys.get(key);
    const holder = state?.holders?.get(token);
    if (holder === undefined) {
      if (state === undefined || state.holders === undefined)
        this.installHolder(key, token, leaseMs, state?.holderId);
      return;
    }
    const deadline = this.#clock.now() + leaseMs;
    if (this.#deferDeadlines) holder.deadline = deadline;
    else this.#heap.schedule(holder, deadline);
  }

  /**
   * Whether a waiter that leaves the head of its queue (its connection closed) lets the next ones
   * be granted. Off while the node does not serve: a standby, an active handing off (its waiters are
   * being redirected, and one granted now would be unknown to the successor), an active held
   * (a stall, a lapsed ownership lease). Turned back on, the heads that can hold now are granted.
   * Every other way to grant (acquire, release, cancel, expiry) is already refused or not run then.
   */
  setGranting(granting: boolean): void {
    if (granting === this.#granting) return;
    this.#granting = granting;
    if (granting) for (const state of [...this.#contended]) this.#grantWaiting(state);
  }

  /**
   * A standby defers lease deadlines (they only matter once it serves, and skipping the heap halves
   * the cost of applying the stream). Turning deferral off does not schedule the recorded deadlines
   * at once: `scheduleDeferred` does, a chunk per call. With 5M holders, all at once blocked a
   * promoting node for 1–2 s, long enough for the other standby to think it dead and promote too
   * (issue 20). Until its chunk comes a holder's lease cannot run out: it ends that much late.
   */
  deferDeadlines(defer: boolean): void {
    if (defer === this.#deferDeadlines) return;
    this.#deferDeadlines = defer;
    this.#deferred = defer ? undefined : valuesOf(this.#keys.maps);
  }

  /**
   * Schedules the deadlines of up to `count` keys' holders recorded while deferred (a Map iterator
   * sees the keys added and removed meanwhile, and a key granted or extended meanwhile is scheduled
   * already). True while some are left.
   */
  scheduleDeferred(count: number): boolean {
    const states = this.#deferred;
    if (states === undefined) return false;
    for (let i = 0; i < count; i++) {
      const next = states.next();
      if (next.done) {
        this.#deferred = undefined;
        return false;
      }
      const state = next.value;
      if (state.token !== NO_TOKEN && state.heapIndex < 0) this.#heap.schedule(state, state.deadline);
      for (const holder of state.holders?.values() ?? [])
        if (holder.heapIndex < 0) this.#heap.schedule(holder, holder.deadline);
    }
    return true;
  }

  /**
   * Replication: forgets the holder `token` of `key` (a release or expiry on the active), or, with
   * no token, the whole key. The stream is ordered, so the standby's exclusive holder is the one
   * freed, whatever its token: a standby that was behind is sent the key's final state, and the
   * token it holds may be older than the one the active freed.
   */
  removeHolder(key: string, token?: bigint): void {
    const state = this.#keys.get(key);
    if (state === undefined) return;
    // A replicated bundle's keys are freed one frame each: its tie goes with the first.
    if (state.token !== NO_TOKEN) this.#bundles.untie(state.token);
    const holders = state.holders;
    if (token !== undefined && holders !== undefined) {
      const holder = holders.get(token);
      if (holder !== undefined) this.#unhold(holder);
      if (state.holderCount > 0) return;
    }
    for (let waiter = state.head; waiter; waiter = state.head) this.#dropWaiter(waiter);
    this.#dropExclusive(state);
    this.#dropHolderSet(state);
    this.#forget(state);
  }

  /** Forgets every holder and waiter (a standby about to load a snapshot, or a demoted node). */
  clear(): void {
    for (const map of this.#keys.maps)
      for (const state of map.values()) {
        for (let waiter = state.head; waiter; waiter = state.head) this.#dropWaiter(waiter);
        this.#heap.remove(state);
        leaveSession(state.holderSession);
        for (const holder of state.holders?.values() ?? []) {
          this.#heap.remove(holder);
          leaveSession(holder.holderSession);
        }
      }
    this.#keys.clear();
    this.#meter?.cleared();
    this.#bundles.clear();
    this.#holders = 0;
    this.#maxToken = 0n;
    this.#listing.cleared();
    this.#clearing = undefined;
  }

  /**
   * `clear()` a slice at a time: forgets up to `count` keys (their holders and waiters); true while
   * some are left, and once none are, the table is cleared as `clear()` leaves it. A standby that
   * replaces a table of millions with a snapshot clears it over many event-loop turns (SnapshotLoad):
   * at once, that blocked it for a second or more. Keys added meanwhile may or may not be visited
   * (KeyTable), and go at the end.
   */
  clearSome(count: number): boolean {
    this.#clearing ??= valuesOf(this.#keys.maps);
    for (let i = 0; i < count; i++) {
      const next = this.#clearing.next();
      if (next.done) {
        this.clear();
        return false;
      }
      this.removeHolder(next.value.key);
    }
    return true;
  }

  /**
   * Every holder with its remaining lease, for a snapshot. Lazy: it may be consumed in chunks with
   * the engine changing in between. Each key held for the whole iteration is visited exactly once;
   * a key granted or freed meanwhile may or may not be (see KeyTable). A key's holders are read
   * when it is visited (their tokens and leases as of that step), and `remainingMs` is counted
   * from the clock reading taken at that step.
   */
  *holders(): Generator<SnapshotHolder> {
    for (const map of this.#keys.maps)
      for (const state of map.values()) {
        const bundle = this.#bundles.held(state.token);
        // A bundle's keys go in a row, at its first key, so the receiver ties them together again.
        if (bundle !== undefined) {
          if (bundle.keys[0] === state.key) for (const key of bundle.keys) yield* this.keyHolders(key);
        } else if (state.token !== NO_TOKEN)
          yield this.#snapshotHolder(state, state, EXCLUSIVE, this.#clock.now());
        else yield* this.#snapshotHolders(state);
      }
  }

  /** Every holder of `key` as `holders()` gives them (the replicator's folded catch-up reads them). */
  keyHolders(key: string): SnapshotHolder[] {
    const state = this.#keys.get(key);
    if (state === undefined) return [];
    if (state.token !== NO_TOKEN) return [this.#snapshotHolder(state, state, EXCLUSIVE, this.#clock.now())];
    return this.#snapshotHolders(state);
  }

  #snapshotHolders(state: KeyState<P>): SnapshotHolder[] {
    const holders = state.holders;
    if (holders === undefined) return [];
    const mode = holders.kind === "shared" ? SHARED : permits(holders.limit);
    const now = this.#clock.now();
    return [...holders.values()].map((h) => this.#snapshotHolder(state, h, mode, now));
  }

  #snapshotHolder(state: KeyState<P>, held: HeldRecord<P>, mode: LockMode, now: number): SnapshotHolder {
    const remainingMs = Math.max(0, Math.ceil(held.deadline - now));
    return {
      key: state.key,
      token: held.token,
      remainingMs,
      id: held.holderId,
      mode,
      slot: slotOf(held) ?? -1,
    };
  }

  /**
   * A floor for the next epoch (a promotion learns its epoch): the largest token held since the last
   * `clear()`, released since or not (its epoch was taken all the same); 0 if none. Kept as holders
   * come rather than found by a scan of every key at each promotion: with millions of keys on a
   * loaded machine, a promoting standby went silent for seconds (issue 20), long enough for the
   * next standby to think it dead too.
   */
  maxHeldToken(): bigint {
    return this.#maxToken;
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
    this.#meterClock?.saw(now);
    for (let entry = this.#heap.popDue(now); entry; entry = this.#heap.popDue(now)) {
      if (entry instanceof Waiter) {
        this.counters.timeouts += 1;
        const timedOut = () => this.#events.timedOut(entry.payload, entry.state.key, entry.id);
        if (entry.bundle !== undefined) this.#bundles.withdraw(entry.bundle, timedOut);
        else this.#withdraw(entry, timedOut);
      } else if (entry instanceof KeyState && this.#bundles.held(entry.token) !== undefined) {
        this.counters.expiries += 1;
        this.#bundles.free(this.#bundles.held(entry.token)!, "expiry");
      } else {
        this.counters.expiries += 1;
        const key = keyOf(entry);
        this.#journal?.free(key, entry.token, "expiry", entry instanceof Holder);
        this.#free(entry);
        this.#holderChanged?.(key);
      }
    }
  }

  /** The exclusive holder of `key`, for status and tests (undefined if it is free or held shared). */
  holder(key: string): { token: bigint; remainingMs: number; id: string | undefined } | undefined {
    const state = this.#keys.get(key);
    if (state === undefined || state.token === NO_TOKEN) return undefined;
    return { token: state.token, remainingMs: state.deadline - this.#clock.now(), id: state.holderId };
  }

  /** Every holder of `key` (exclusive, shared or permits), oldest grant first. */
  holdersOf(key: string): KeyHolder[] {
    const state = this.#keys.get(key);
    if (state === undefined) return [];
    const now = this.#clock.now();
    // Both the key's own exclusive holder and its set, though they never coexist: the checks
    // that read this (tests, the simulator's checker) must see it if they ever did.
    const holders: KeyHolder[] = [...(state.holders?.values() ?? [])].map((h) => ({
      token: h.token,
      remainingMs: h.deadline - now,
      id: h.holderId,
      mode: state.holders!.kind,
      slot: h.slot < 0 ? undefined : h.slot,
    }));
    if (state.token !== NO_TOKEN)
      holders.push({
        token: state.token,
        remainingMs: state.deadline - now,
        id: state.holderId,
        mode: "exclusive",
        slot: undefined,
      });
    return holders.sort((x, y) => (x.token < y.token ? -1 : 1));
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
    return this.#listing.prepare(budget);
  }

  /** Drops the ordered index (nobody lists any more): the hot path stops maintaining it. */
  stopListing(): void {
    this.#listing.stop();
  }

  /**
   * Held keys in code-point (UTF-8 byte) order, from the first after `after` that starts with
   * `prefix`, at most `limit`; `more` says whether another matching key follows. Costs
   * O(log n + limit), whatever n. Call `prepareListing` until it returns true first.
   */
  listHeld(input: ListHeldInput): { keys: HeldKey[]; more: boolean } {
    return this.#listing.list(input, this.#clock.now());
  }

  /** The `limit` keys with the most waiters, most first; reads only keys that have a queue. */
  mostContended(limit: number): Array<{ key: string; waiters: number }> {
    return mostContended(this.#contended, limit);
  }

  /** A key nobody holds: it becomes held in `mode` by this grant (a new key). */
  #grantFirst(
    key: string,
    mode: LockMode,
    leaseMs: number,
    id: string | undefined,
    session: Session<P> | undefined,
  ): GrantedOutcome | Rejected<"TOO_MANY_KEYS"> {
    if (this.#semaphores !== undefined) {
      // A free key's kind is decided here; once held, every acquire is checked against it.
      const limit = this.#semaphores.limitOf(key);
      const conflict = limit === undefined ? undefined : modeConflict(mode, limit);
      if (conflict !== undefined) return { status: "rejected", ...conflict };
    }
    if (this.#holders >= this.#limits.maxKeys) return { status: "rejected", code: "TOO_MANY_KEYS" };
    if (mode.kind !== "exclusive") {
      const state = new KeyState<P>(key, NO_TOKEN, undefined, undefined);
      this.#keys.add(key, state);
      this.#listing.added(key);
      return this.#grantNow(state, mode, leaseMs, id, session);
    }
    // The hot path of every lock's life, kept as short as it was before lock modes.
    const token = this.#nextToken();
    const state = new KeyState<P>(key, token, id, session);
    if (session !== undefined) session.heldCount += 1;
    this.#keys.add(key, state);
    this.#listing.added(key);
    this.#holders += 1;
    const now = this.#clock.now();
    this.#heap.schedule(state, now + leaseMs);
    this.counters.grants += 1;
    this.#journal?.grant(key, token, leaseMs, id, state.deadline);
    if (this.#meter !== undefined) {
      // The hot path: the key and kind are known, no lookups, and the deadline's clock reading serves.
      state.grantLead = grantLead(leaseMs);
      state.meterSlot = this.#meter.held(key, "exclusive", 0);
      this.#meterClock!.saw(now);
    }
    this.#holderChanged?.(key);
    return { status: "granted", token, replayed: false, slot: undefined };
  }

  /** A held key takes a new holder beside the others on arrival (nobody queued). */
  #grantArrival(
    state: KeyState<P>,
    mode: LockMode,
    leaseMs: number,
    id: string | undefined,
    session: Session<P> | undefined,
  ): GrantedOutcome | { readonly status: "rejected"; readonly code: "TOO_MANY_KEYS" } {
    if (this.#holders >= this.#limits.maxKeys) return { status: "rejected", code: "TOO_MANY_KEYS" };
    return this.#grantNow(state, mode, leaseMs, id, session);
  }

  #grantNow(
    state: KeyState<P>,
    mode: LockMode,
    leaseMs: number,
    id: string | undefined,
    session: Session<P> | undefined,
  ): GrantedOutcome {
    const held = this.#hold(state, mode, this.#nextToken(), id, session, -1, 0);
    const now = this.#clock.now();
    this.#heap.schedule(held, now + leaseMs);
    if (held.grantLead !== NOT_GRANTED_HERE) {
      held.grantLead = grantLead(leaseMs);
      this.#meterClock!.saw(now);
    }
    this.counters.grants += 1;
    this.#journalGrant(state, held, leaseMs);
    return { status: "granted", token: held.token, replayed: false, slot: slotOf(held) };
  }

  /** A retry of the acquire that holds the key (same id): the same grant, on this connection now. */
  #replay(held: HeldRecord<P>, session: Session<P> | undefined): GrantedOutcome {
    leaveSession(held.holderSession);
    if (session !== undefined) session.heldCount += 1;
    held.holderSession = session;
    return { status: "granted", token: held.token, replayed: true, slot: slotOf(held) };
  }

  /** The next token to grant (recorded for maxHeldToken). */
  #nextToken(): bigint {
    const token = this.#tokens.next();
    if (token > this.#maxToken) this.#maxToken = token;
    return token;
  }

  /**
   * Records `token` as a holder of `state` in `mode`: the key's own record for an exclusive
   * holder, else a `Holder` in its set, on `slot` (-1: the lowest free one) for a permit.
   * `waitedMs`: the grant's queueing time for the meter; undefined for a replicated holder.
   */
  #hold(
    state: KeyState<P>,
    mode: LockMode,
    token: bigint,
    id: string | undefined,
    session: Session<P> | undefined,
    slot: number,
    waitedMs: number | undefined,
  ): HeldRecord<P> {
    this.#holders += 1;
    if (token > this.#maxToken) this.#maxToken = token;
    if (session !== undefined) session.heldCount += 1;
    let held: HeldRecord<P> = state;
    if (mode.kind === "exclusive") {
      state.token = token;
      state.holderId = id;
      state.holderSession = session;
    } else {
      const holders = state.holders ?? state.startHolderSet(mode.kind, limitOf(mode));
      held = new Holder<P>(state, token, id, session, slot >= 0 ? slot : holders.freeSlot());
      holders.add(held);
    }
    if (this.#meter !== undefined) this.#metered(held, waitedMs);
    return held;
  }

  #journalGrant(state: KeyState<P>, held: HeldRecord<P>, leaseMs: number): void {
    this.#holderChanged?.(state.key);
    if (this.#journal === undefined) return;
    if (held === state) this.#journal.grant(state.key, held.token, leaseMs, held.holderId, held.deadline);
    else {
      const holders = state.holders!;
      const mode = holders.kind === "shared" ? SHARED : permits(holders.limit);
      this.#journal.grant(state.key, held.token, leaseMs, held.holderId, held.deadline, mode, slotOf(held));
    }
  }

  #find(key: string, token: bigint): HeldRecord<P> | undefined {
    const state = this.#keys.get(key);
    if (state === undefined) return undefined;
    if (state.token === token && token !== NO_TOKEN) return state;
    return state.holders?.get(token);
  }

  #findById(state: KeyState<P>, id: string): HeldRecord<P> | undefined {
    if (state.token !== NO_TOKEN) return state.holderId === id ? state : undefined;
    return state.holders?.findById(id);
  }

  /**
   * A grant ended (released or expired): waiters that can now hold the key are granted, in queue
   * order, or the key is forgotten if nobody holds or wants it.
   */
  #free(held: HeldRecord<P>): void {
    if (!(held instanceof Holder)) {
      this.#freeExclusive(held);
      return;
    }
    const state = held.state;
    this.#unhold(held);
    this.#grantWaiting(state);
    if (state.holderCount === 0 && state.waiterCount === 0) this.#forget(state);
  }

  /** The exclusive holder of `state` leaves: the key is forgotten, handed to the next, or shared. */
  #freeExclusive(state: KeyState<P>): void {
    const next = state.head;
    if (this.#meter !== undefined) this.#meterFreed(state);
    if (next === undefined) {
      leaveSession(state.holderSession);
      this.#heap.remove(state);
      this.#holders -= 1;
      this.#keys.delete(state.key);
      this.#listing.removed(state.key);
      return;
    }
    if (next.mode.kind === "exclusive" && next.bundle === undefined) {
      // The common hand-off, from one exclusive holder to the next: the key's record is reused.
      leaveSession(state.holderSession);
      this.#dropWaiter(next);
      this.#handTo(state, next);
      return;
    }
    this.#unhold(state, false);
    this.#grantWaiting(state);
  }

  /**
   * Grants the queue's head, and the waiters behind it while they can join (phase-fair). Events go
   * out once every grant is made; the first grant is kept in locals, since a release usually grants
   * one waiter (a permit, an exclusive holder) and an array per hand-off is garbage for nothing.
   */
  #grantWaiting(state: KeyState<P>): void {
    const now = this.#clock.now();
    this.#meterClock?.saw(now);
    let first: Waiter<P> | undefined;
    let firstHeld: HeldRecord<P> | undefined;
    let more: Array<[Waiter<P>, HeldRecord<P>]> | undefined;
    for (let head = state.head; head !== undefined; head = state.head) {
      if (head.bundle !== undefined) {
        // Granted only if it heads all its keys' queues with every key free; else all behind wait.
        if (first === undefined && head.bundle.grantable()) this.#bundles.grantQueued(head.bundle);
        break;
      }
      if (!this.#holdRule(head.mode, state.holding, state.holderCount, this.#limits.maxSharedHolders)) break;
      this.#dropWaiter(head);
      const held = this.#hold(
        state,
        head.mode,
        this.#nextToken(),
        head.id,
        head.session,
        -1,
        now - head.queuedAt,
      );
      this.#scheduleGrant(state, held, head, now);
      if (first === undefined) {
        first = head;
        firstHeld = held;
      } else {
        more ??= [];
        more.push([head, held]);
      }
    }
    if (first === undefined) return;
    this.#emitGranted(state, first, firstHeld!, now);
    if (more !== undefined) for (const [waiter, held] of more) this.#emitGranted(state, waiter, held, now);
  }

  #emitGranted(state: KeyState<P>, waiter: Waiter<P>, held: HeldRecord<P>, now: number): void {
    this.#events.granted(
      waiter.payload,
      state.key,
      held.token,
      waiter.id,
      now - waiter.queuedAt,
      slotOf(held),
    );
  }

  /** The exclusive hand-off: `next` (already dequeued) holds `state` now. */
  #handTo(state: KeyState<P>, next: Waiter<P>): void {
    const token = this.#nextToken();
    const now = this.#clock.now();
    state.token = token;
    state.holderId = next.id;
    state.holderSession = next.session;
    next.session.heldCount += 1;
    if (this.#meter !== undefined) {
      this.#meterClock!.saw(now);
      this.#metered(state, now - next.queuedAt);
    }
    this.#scheduleGrant(state, state, next, now);
    this.#events.granted(next.payload, state.key, token, next.id, now - next.queuedAt, undefined);
  }

  #scheduleGrant(state: KeyState<P>, held: HeldRecord<P>, waiter: Waiter<P>, now: number): void {
    this.#heap.schedule(held, now + waiter.leaseMs);
    if (held.grantLead !== NOT_GRANTED_HERE) held.grantLead = grantLead(waiter.leaseMs);
    this.counters.grants += 1;
    this.counters.handoffs += 1;
    this.#journalGrant(state, held, waiter.leaseMs);
  }

  /**
   * Takes a holder off its key (the key stays, maybe with no holder). `meter`: false when the
   * caller told the meter already.
   */
  #unhold(held: HeldRecord<P>, meter = true): void {
    if (meter && this.#meter !== undefined) this.#meterFreed(held);
    this.#heap.remove(held);
    this.#holders -= 1;
    leaveSession(held.holderSession);
    if (held instanceof Holder) {
      const state = held.state;
      state.holders!.remove(held);
      if (state.holders!.count === 0) state.endHolderSet();
      return;
    }
    held.token = NO_TOKEN;
    held.holderId = undefined;
    held.holderSession = undefined;
  }

  /**
   * Tells the meter of a new holder. Its grant lead is set when its lease is scheduled, right after
   * (LEAD_PENDING until then); a replicated one (undefined wait) has none.
   */
  #metered(held: HeldRecord<P>, waitedMs: number | undefined): void {
    held.grantLead = waitedMs === undefined ? NOT_GRANTED_HERE : LEAD_PENDING;
    held.meterSlot = this.#meter!.held(keyOf(held), kindOf(held), waitedMs);
  }

  /** Tells the meter a holder leaves (no clock read: the run's latest reading serves). */
  #meterFreed(held: HeldRecord<P>): void {
    const lead = held.grantLead;
    const heldMs = lead === NOT_GRANTED_HERE ? undefined : this.#meterClock!.now() - (held.deadline - lead);
    this.#meter!.freed(held.meterSlot, heldMs);
  }

  #dropExclusive(state: KeyState<P>): void {
    if (state.token !== NO_TOKEN) this.#unhold(state);
  }

  #dropHolderSet(state: KeyState<P>): void {
    for (const holder of [...(state.holders?.values() ?? [])]) this.#unhold(holder);
  }

  /** The key has no holder and no waiter: it is not held any more. */
  #forget(state: KeyState<P>): void {
    this.#heap.remove(state);
    this.#keys.delete(state.key);
    this.#listing.removed(state.key);
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

  /**
   * A queued acquire leaves without a grant (cancelled, timed out, its connection gone): `then`
   * runs once it is gone (its event), and if it was the head, the waiters behind it may now join
   * the key's shared holders.
   */
  #withdraw(waiter: Waiter<P>, then?: () => void): void {
    if (waiter.bundle !== undefined) {
      this.#bundles.withdraw(waiter.bundle, then);
      return;
    }
    const state = waiter.state;
    const wasHead = state.head === waiter;
    this.#dropWaiter(waiter);
    then?.();
    if (wasHead && this.#granting && this.#keys.get(state.key) === state) this.#grantWaiting(state);
  }

  /** A semaphore's kind for a free key that `--semaphores` makes one (bundles are locks). */
  #semaphoreKind(key: string): "semaphore" | undefined {
    return this.#semaphores?.limitOf(key) === undefined ? undefined : "semaphore";
  }

  #scheduleWait(waiter: Waiter<P>, waitMs: number): void {
    if (waitMs > 0) this.#heap.schedule(waiter, this.#clock.now() + waitMs);
    else this.#heap.remove(waiter);
  }

  /** A key with no holder and nobody queued (a bundle left it) is not kept. */
  #forgetIfIdle(state: KeyState<P>): void {
    if (state.holderCount === 0 && state.waiterCount === 0 && this.#keys.get(state.key) === state)
      this.#forget(state);
  }

  /** Queues `waiter` at the end of its key's queue (and of its session's). */
  #enqueue(waiter: Waiter<P>): void {
    const state = waiter.state;
    if (state.waiterCount === 0) this.#contended.add(state);
    state.enqueue(waiter);
    waiter.session.add(waiter);
    this.#waiters += 1;
    this.#meter?.queued(state.key);
  }

  #dropWaiter(waiter: Waiter<P>): void {
    this.#meter?.unqueued(waiter.state.key);
    waiter.state.unlink(waiter);
    if (waiter.state.waiterCount === 0) this.#contended.delete(waiter.state);
    waiter.session.remove(waiter);
    this.#heap.remove(waiter);
    this.#waiters -= 1;
  }
}

/** A holder as `holders()` yields it for a snapshot (`slot` -1 unless a permit). */
export interface SnapshotHolder {
  readonly key: string;
  readonly token: bigint;
  readonly remainingMs: number;
  readonly id: string | undefined;
  readonly mode: LockMode;
  readonly slot: number;
}

/** One holder of a key as `holdersOf` returns it. */
export interface KeyHolder {
  readonly token: bigint;
  readonly remainingMs: number;
  readonly id: string | undefined;
  readonly mode: "exclusive" | "shared" | "permit";
  readonly slot: number | undefined;
}

/** A grant held by `session` (if any) ended or moved to another session. */
function leaveSession<P>(session: Session<P> | undefined): void {
  if (session !== undefined) session.heldCount -= 1;
}

function kindOf<P>(held: HeldRecord<P>): HolderKind {
  return held instanceof Holder ? held.state.holders!.kind : "exclusive";
}

function keyOf<P>(held: HeldRecord<P>): string {
  return held instanceof Holder ? held.state.key : held.key;
}

function limitOf(mode: LockMode): number {
  return mode.kind === "permit" ? mode.limit : 0;
}

/** Every value of `maps`, one Map after the other, lazily. */
function* valuesOf<V>(maps: ReadonlyArray<ReadonlyMap<string, V>>): Generator<V> {
  for (const map of maps) yield* map.values();
}
