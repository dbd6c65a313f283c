import { type Timer, TimerQueue } from "@lock/deadline-heap";
import type { ErrorCode, NodeRole } from "@lock/protocol";
import { DeadlineTimer } from "./deadline-timer.js";
import { type Clock, monotonicClock } from "./engine/clock.js";
import {
  type AcquireInput,
  type AcquireOutcome,
  type BundleInput,
  type BundleOutcome,
  type EngineCounters,
  type EngineJournal,
  type HeldKey,
  type KeyHolder,
  type ListHeldInput,
  LockEngine,
  type Ownership,
  type SnapshotHolder,
  type TryAcquireOutcome,
} from "./engine/engine.js";
import type { HolderSummary } from "./engine/holder-summary.js";
import type { HoldRule, LockMode } from "./engine/lock-mode.js";
import type { Session } from "./engine/records.js";
import { type SemaphoreRule, SemaphoreRules } from "./engine/semaphore-rules.js";
import { TokenIssuer } from "./engine/token-issuer.js";
import { EpochKeeper, type LearnOutcome, type TakenEpoch } from "./epoch/epoch-keeper.js";
import { DEFAULT_MAX_CLOCK_SKEW_MS } from "./epoch/epoch-plan.js";
import type { EpochStore } from "./epoch/epoch-store.js";
import type { ServerLimits } from "./limits.js";
import { NO_OBSERVER, type ServerObserver } from "./observer.js";
import { DataDirLock } from "./store/data-dir-lock.js";
import { EpochFile } from "./store/epoch-file.js";
import { WatchRegistry } from "./watch/watch-registry.js";

/** Holders whose lease deadlines a promoted standby schedules per event-loop turn (about 5 ms). */
const DEFERRED_DEADLINES_PER_TURN = 8192;

/** Where the engine delivers a queued acquire's outcome: the connection that asked. */
export interface AcquireSink {
  /** `slot`: a permit's slot (undefined for exclusive and shared grants). */
  granted(key: string, token: bigint, id: string | undefined, slot: number | undefined): void;
  timedOut(key: string, id: string | undefined): void;
  /** The server withdrew the queued acquire (its key's slot is moving away): answer `E` with `code`. */
  refused(key: string, id: string | undefined, code: ErrorCode, message: string): void;
}

export type { NodeRole } from "@lock/protocol";

/** Why an active does not serve for a while (`LockNode.hold`). */
export type HoldReason = "clock" | "stall" | "lease";

/** What a cluster adds to a node's own behaviour (`LockNodeOptions.hooks`); a single node has none. */
export interface NodeHooks {
  /** Called before lease deadlines run: the cluster's stall check. */
  beforeDeadlines?(): void;
  /** Called when the node starts serving (promoted, or a hold ended): operators see it in the log. */
  serving?(): void;
  /**
   * Called when a sequence ran out and the node moved to a new epoch, before the grant that needed
   * it is journaled: the cluster announces the epoch (`!P`) ahead of that grant.
   */
  epochRenewed?(epoch: bigint): void;
  /**
   * With a coordinator: the spare epoch taken from the store for a sequence that runs out (this
   * node's own epoch plan must not mint one). Undefined without a coordinator.
   */
  spareEpoch?(): bigint | undefined;
  /** On a standby: the epoch of the active it follows, as its heartbeats say; undefined while it follows none. */
  followedEpoch?(): bigint | undefined;
  /**
   * Why `Q`/`W` (shared holders, permits) cannot be served now, or undefined when they can: a peer
   * of the cluster speaks an older peer protocol, which cannot replicate them.
   */
  lockModesRefusal?(): string | undefined;
}

/**
 * The holder table's direct reads and writes, for the cluster only: a standby's replica is written
 * from the active's stream, an active's snapshot read from it, a demoted node's dropped.
 */
export type HolderTable = Pick<
  LockEngine<AcquireSink>,
  | "installHolder"
  | "installExtension"
  | "removeHolder"
  | "holder"
  | "clear"
  | "clearSome"
  | "holders"
  | "keyHolders"
  | "maxHeldToken"
>;

export interface LockNodeOptions {
  /**
   * The node's data directory, locked for the process's lifetime; holds the epoch file. Undefined
   * only with an injected `epochStore` (tests, the simulator): nothing on disk then.
   */
  readonly dataDir: string | undefined;
  readonly limits: ServerLimits;
  /** The address clients and peers know this node by. */
  readonly advertise: string;
  readonly clock?: Clock;
  /** Every timer of the node (leases, waits, epoch holds; the cluster's too). On `clock` by default. */
  readonly timers?: TimerQueue;
  readonly journal?: EngineJournal;
  readonly observer?: ServerObserver;
  /** A cluster node starts as a standby and promotes by the cluster's rules. */
  readonly startAs?: NodeRole;
  /** The epoch's low bits (0..255): the node's position in the peers list unless configured. */
  readonly nodeId?: number;
  /** Bound on this machine's wall-clock error (docs/consistency.md, "Epochs"). Default 500 ms. */
  readonly maxClockSkewMs?: number;
  /** Wall clock for epoch rounds; `Date.now` unless a test injects one. */
  readonly wallNow?: () => number;
  /** Where the highest known epoch is kept; `<dataDir>/epoch` unless a test injects one. */
  readonly epochStore?: EpochStore;
  /** The cluster's part in the node's behaviour (see NodeHooks): given at construction, never patched on. */
  readonly hooks?: NodeHooks;
  /** Keys that are semaphores of a fixed number of permits, by pattern (SemaphoreRules). */
  readonly semaphores?: readonly SemaphoreRule[];
  /** @internal The simulator's negative control only (LockEngine's holdRule). */
  readonly holdRule?: HoldRule;
  /** @internal The simulator's negative control only (LockEngine's bundleKeyByKey). */
  readonly bundleKeyByKey?: boolean;
}

/**
 * One lockd node, behind one façade: the engine, its token epochs (kept by an EpochKeeper) and the
 * timer that drives leases and waits stay inside. Outside, callers get its state read-only (role,
 * epochs, holds), the lock verbs a session runs, stats, and the listing of held keys; the cluster
 * also changes its role and epochs through the methods marked "cluster", and writes a standby's
 * table through `holderTable`. The network layer and the cluster layer talk to the node, never to
 * files or timers directly.
 *
 * An active serves only while nothing holds it (`hold`): right after it took an epoch ahead of its
 * clock, and after a stall until the cluster confirms it is still the active. While held, lock
 * verbs get `NO_ACTIVE` and no lease expires, so nothing is granted.
 */
export class LockNode {
  readonly #engine: LockEngine<AcquireSink>;
  readonly advertise: string;
  readonly clock: Clock;
  readonly timers: TimerQueue;
  readonly startedAt: number;
  readonly observer: ServerObserver;
  /** Which connections watch which keys (`O`), told of the engine's holder changes. */
  readonly watches: WatchRegistry;
  readonly #epochs: EpochKeeper;
  #role: NodeRole = "active";
  #activeAddress: string | undefined;
  readonly #hooks: NodeHooks;
  readonly #dirLock: DataDirLock | undefined;
  readonly #timer: DeadlineTimer;
  /** The next chunk of a promotion's deferred lease deadlines (`#scheduleDeferredDeadlines`). */
  #deferredDeadlines: Timer | undefined;
  readonly #wallNow: () => number;
  readonly #holds = new Set<HoldReason>();
  #clockHold: Timer | undefined;
  #wasServing = false;

  constructor(options: LockNodeOptions) {
    this.clock = options.clock ?? monotonicClock;
    this.timers = options.timers ?? new TimerQueue(this.clock);
    this.advertise = options.advertise;
    this.observer = options.observer ?? NO_OBSERVER;
    this.#activeAddress = options.advertise;
    this.#hooks = options.hooks ?? {};
    this.#wallNow = options.wallNow ?? Date.now;
    const { dataDir } = options;
    if (dataDir === undefined && options.epochStore === undefined)
      throw new TypeError("a LockNode needs a data directory or an epoch store");
    const store = options.epochStore ?? new EpochFile(dataDir!);
    this.#dirLock = dataDir === undefined ? undefined : DataDirLock.acquire(dataDir);
    try {
      this.#epochs = new EpochKeeper({
        store,
        nodeId: options.nodeId ?? 0,
        wallNow: this.#wallNow,
        maxClockSkewMs: options.maxClockSkewMs ?? DEFAULT_MAX_CLOCK_SKEW_MS,
      });
      // A single node takes a fresh epoch before its first grant, so every token from now on exceeds
      // every earlier one. A cluster node starts as a standby and takes one when it promotes.
      const single = options.startAs !== "standby";
      const start = single ? this.#epochs.take(true) : undefined;
      const tokens = new TokenIssuer(start?.epoch ?? this.#epochs.highest, () => this.#renewEpoch());
      this.#engine = new LockEngine<AcquireSink>({
        clock: this.clock,
        tokens,
        events: {
          granted: (sink, key, token, id, waitedMs, slot) => {
            this.observer.granted(waitedMs);
            sink.granted(key, token, id, slot);
          },
          timedOut: (sink, key, id) => sink.timedOut(key, id),
        },
        ...(options.journal ? { journal: options.journal } : {}),
        ...(this.observer.contention ? { meter: this.observer.contention } : {}),
        limits: {
          maxKeys: options.limits.maxKeys,
          maxWaitersPerKey: options.limits.maxWaitersPerKey,
          maxBundleKeys: options.limits.maxBundleKeys,
        },
        ...(options.semaphores?.length ? { semaphores: new SemaphoreRules(options.semaphores) } : {}),
        ...(options.holdRule ? { holdRule: options.holdRule } : {}),
        ...(options.bundleKeyByKey ? { bundleKeyByKey: true } : {}),
      });
      this.watches = new WatchRegistry(this.#engine, options.limits);
      this.#timer = new DeadlineTimer(
        {
          nextDeadline: () => this.#engine.nextDeadline(),
          tick: () => {
            this.#hooks.beforeDeadlines?.();
            if (this.serving) this.#engine.tick();
          },
        },
        this.timers,
      );
      this.startedAt = this.clock.now();
      if (start) this.#holdUntil(start.serveFromMs);
      else this.setRole("standby", undefined);
    } catch (error) {
      this.#dirLock?.release();
      throw error;
    }
  }

  get role(): NodeRole {
    return this.#role;
  }

  /** The active's address as far as this node knows (itself when active). */
  get activeAddress(): string | undefined {
    return this.#activeAddress;
  }

  /** On a standby: the epoch of the active it follows (see NodeHooks.followedEpoch). */
  get followedEpoch(): bigint | undefined {
    return this.#hooks.followedEpoch?.();
  }

  get epoch(): bigint {
    return this.#engine.epoch;
  }

  /**
   * The epoch to report to people and clients (`I`, /status): this node's own on an active; on a
   * standby, which issues no tokens, the epoch of the active it follows (0 while it follows none).
   * A standby's own `epoch` is whatever its table started with: 0, or its last one before a restart.
   */
  get reportedEpoch(): bigint {
    return this.#role === "active" ? this.epoch : (this.followedEpoch ?? 0n);
  }

  /** Active and not held: lock verbs are served. */
  get serving(): boolean {
    return this.#role === "active" && this.#holds.size === 0;
  }

  get uptimeMs(): number {
    return Math.round(this.clock.now() - this.startedAt);
  }

  /** The highest epoch this node knows of, its own included (stored before it is acted on). */
  get highestEpoch(): bigint {
    return this.#epochs.highest;
  }

  /** The epoch this node took last, if it runs ahead of the clock now (see EpochKeeper.aheadOfClock). */
  epochAhead(): TakenEpoch | undefined {
    return this.#epochs.aheadOfClock();
  }

  /** The epoch this node took last (promotion, start of a single node), if any. */
  get takenEpoch(): TakenEpoch | undefined {
    return this.#epochs.taken;
  }

  // The lock verbs, for one session each (LockVerbs): see LockEngine for their contracts.

  openSession(label?: string): Session<AcquireSink> {
    return this.#engine.openSession(label);
  }

  closeSession(session: Session<AcquireSink>): void {
    this.#engine.closeSession(session);
  }

  /** The session's queued acquires, in no particular order. */
  sessionWaiters(session: Session<AcquireSink>): Array<{ key: string; id: string | undefined }> {
    return this.#engine.sessionWaiters(session);
  }

  acquire(session: Session<AcquireSink>, input: AcquireInput<AcquireSink>): AcquireOutcome<AcquireSink> {
    return this.#engine.acquire(session, input);
  }

  /** A bundle (engine/bundle.ts): every key at once under one token and one lease. */
  acquireAll(session: Session<AcquireSink>, input: BundleInput<AcquireSink>): BundleOutcome<AcquireSink> {
    return this.#engine.acquireAll(session, input);
  }

  tryAcquire(
    key: string,
    leaseMs: number,
    id: string | undefined,
    session: Session<AcquireSink>,
    mode?: LockMode,
  ): TryAcquireOutcome {
    return this.#engine.tryAcquire(key, leaseMs, id, session, mode);
  }

  ownership(key: string, token: bigint, session: Session<AcquireSink>, id: string | undefined): Ownership {
    return this.#engine.ownership(key, token, session, id);
  }

  heldBy(key: string, session: Session<AcquireSink>): number {
    return this.#engine.heldBy(key, session);
  }

  release(key: string, token: bigint): boolean {
    return this.#engine.release(key, token);
  }

  extend(key: string, token: bigint, leaseMs: number): boolean {
    return this.#engine.extend(key, token, leaseMs);
  }

  /** Withdraws the queued acquire `id` on `key`: where its reply goes, or undefined if none was queued. */
  cancel(key: string, id: string, withdrawn?: (sink: AcquireSink) => void): AcquireSink | undefined {
    return this.#engine.cancel(key, id, withdrawn);
  }

  // Stats and the listing of held keys (`I`, /status, /metrics, /locks).

  /** Withdraws every queued acquire of `key` (a slot moving away); see LockEngine.withdrawQueue. */
  withdrawQueue(key: string, withdrawn: (sink: AcquireSink, id: string | undefined) => void): number {
    return this.#engine.withdrawQueue(key, withdrawn);
  }

  /** Whether `key` has a holder (a moving slot drains: SlotMoves polls its keys). */
  isKeyHeld(key: string): boolean {
    return this.#engine.isHeld(key);
  }

  get keyCount(): number {
    return this.#engine.keyCount;
  }

  get waiterCount(): number {
    return this.#engine.waiterCount;
  }

  /** Counts since start (grants, releases, expiries…): live, read-only. */
  get counters(): Readonly<EngineCounters> {
    return this.#engine.counters;
  }

  mostContended(limit: number): Array<{ key: string; waiters: number }> {
    return this.#engine.mostContended(limit);
  }

  /** Every holder, read lazily (a snapshot, a test). */
  holders(): Iterable<SnapshotHolder> {
    return this.#engine.holders();
  }

  /** The key's holders as a watcher is told them (engine/holder-summary.ts). */
  holderSummary(key: string): HolderSummary {
    return this.#engine.holderSummary(key);
  }

  /** Every holder of `key`, with its mode and slot (tests, the simulator's checker). */
  holdersOf(key: string): KeyHolder[] {
    return this.#engine.holdersOf(key);
  }

  /** Why shared holders and permits cannot be granted now (a cluster mid-upgrade), if so. */
  lockModesRefusal(): string | undefined {
    return this.#hooks.lockModesRefusal?.();
  }

  /** Builds the sorted index of held keys a step at a time; true once it is ready for `listHeld`. */
  prepareListing(budget: number): boolean {
    return this.#engine.prepareListing(budget);
  }

  listHeld(input: ListHeldInput): { keys: HeldKey[]; more: boolean } {
    return this.#engine.listHeld(input);
  }

  /** Cluster: the table's direct reads and writes (see HolderTable). */
  get holderTable(): HolderTable {
    return this.#engine;
  }

  /**
   * Cluster: takes a new, stored epoch above every epoch known and issues tokens from it (promotion, or
   * moving above a rival's epoch). `informed`: this node heard the whole cluster since it started
   * (epoch-plan.ts). If the epoch runs ahead of the clock, the node holds until it may grant.
   */
  takeEpoch(informed: boolean): bigint {
    const plan = this.#epochs.take(informed);
    this.#engine.moveToEpoch(plan.epoch);
    this.#holdUntil(plan.serveFromMs);
    return plan.epoch;
  }

  /**
   * Cluster, with a coordinator: issues tokens from `epoch`, taken from the store's counter (above
   * every epoch known; stored here before the first grant from it). No clock hold: the store's
   * counter, not the clock, orders it after every earlier epoch.
   */
  useEpoch(epoch: bigint): void {
    this.#epochs.learn(epoch);
    this.#engine.moveToEpoch(epoch);
  }

  /** Cluster: records an epoch heard from a peer (stored before this returns when it is a new highest). */
  learnEpoch(epoch: bigint): LearnOutcome {
    return this.#epochs.learn(epoch);
  }

  /** Cluster: stops granting (see the class comment) until `endHold(reason)`; holds nest by reason. */
  hold(reason: HoldReason): void {
    this.#holds.add(reason);
    this.#servingChanged();
  }

  endHold(reason: HoldReason): void {
    if (reason === "clock" && this.#clockHold) {
      this.#clockHold.cancel();
      this.#clockHold = undefined;
    }
    if (!this.#holds.delete(reason)) return;
    this.#servingChanged();
  }

  /** Why the node does not serve right now, if it is a held active. */
  get heldFor(): HoldReason | undefined {
    for (const reason of ["stall", "lease", "clock"] as const) if (this.#holds.has(reason)) return reason;
    return undefined;
  }

  isHeld(reason: HoldReason): boolean {
    return this.#holds.has(reason);
  }

  /**
   * Cluster: switches role. Only the active runs lease and wait deadlines: a standby's holder table is a
   * replica, and its leases are reclaimed by the active (or by this node once promoted).
   */
  setRole(role: NodeRole, activeAddress: string | undefined): void {
    this.#role = role;
    this.#activeAddress = activeAddress;
    // Holds concern an active's grants; a promotion that needs one sets it again.
    if (role !== "active") {
      this.endHold("clock");
      this.#holds.clear();
    }
    this.#engine.deferDeadlines(role !== "active");
    if (role === "active") this.#scheduleDeferredDeadlines();
    this.#servingChanged();
  }

  /**
   * A promoted standby's lease deadlines go into the heap a chunk per event-loop turn
   * (LockEngine.deferDeadlines), so that the new active keeps sending heartbeats meanwhile.
   */
  readonly #scheduleDeferredDeadlines = (): void => {
    this.#deferredDeadlines?.cancel();
    this.#deferredDeadlines = undefined;
    if (this.#role !== "active") return;
    const more = this.#engine.scheduleDeferred(DEFERRED_DEADLINES_PER_TURN);
    this.#timer.poke();
    if (more) this.#deferredDeadlines = this.timers.after(0, this.#scheduleDeferredDeadlines);
  };

  /** Cluster: a standby points clients at `active` (undefined: none known); true if that changed anything. */
  follow(active: string | undefined): boolean {
    if (this.#activeAddress === active) return false;
    this.#activeAddress = active;
    return true;
  }

  #servingChanged(): void {
    const serving = this.serving;
    this.#engine.setGranting(serving);
    if (serving) this.#timer.start();
    else this.#timer.stop();
    if (serving && !this.#wasServing) this.#hooks.serving?.();
    this.#wasServing = serving;
  }

  /** Re-arms the deadline timer after requests that may have added an earlier deadline. */
  afterRequests(): void {
    this.#timer.poke();
  }

  close(): void {
    this.endHold("clock");
    this.#deferredDeadlines?.cancel();
    this.#timer.stop();
    this.#dirLock?.release();
  }

  /** A sequence ran out: the next epoch is taken at once (no wait; see docs/consistency.md). */
  #renewEpoch(): bigint {
    const spare = this.#hooks.spareEpoch?.();
    if (spare !== undefined) this.#epochs.learn(spare);
    const epoch = spare ?? this.#epochs.take(true).epoch;
    this.#hooks.epochRenewed?.(epoch);
    return epoch;
  }

  #holdUntil(serveFromMs: number): void {
    const waitMs = Math.ceil(serveFromMs - this.#wallNow());
    if (waitMs <= 0) return;
    this.hold("clock");
    this.#clockHold?.cancel();
    this.#clockHold = this.timers.after(waitMs, () => {
      this.#clockHold = undefined;
      this.endHold("clock");
    });
  }
}
