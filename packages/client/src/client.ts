import { keySlot, type LockMode, type Request } from "@lock/protocol";
import { type AcquireContext, AcquireOp, type AcquireSpec } from "./acquire.js";
import { bundleKeys } from "./bundle-keys.js";
import { type ElectOptions, elect, type Leadership } from "./election.js";
import {
  AbortError,
  ClientClosedError,
  InvalidArgumentError,
  LockLostError,
  LockServerError,
  ProtocolError,
} from "./errors.js";
import { type ClientEventListener, type ClientEventName, Emitter } from "./events.js";
import { RequestIds } from "./ids.js";
import { LinkedSet } from "./linked-set.js";
import { Lock, type LockBackend } from "./lock.js";
import { type HolderState, KeyObserver, type ObserveContext, type ObserveOptions } from "./observe.js";
import {
  checkDuration,
  checkFlag,
  checkKey,
  checkLockMode,
  type LockClientOptions,
  type ResolvedOptions,
  resolveOptions,
} from "./options.js";
import { type RetryCallback, RetryingRequest, type RetryPolicy } from "./retrying-request.js";
import type { SlotState } from "./server-pool.js";
import { SlotRouter } from "./slot-router.js";
import { type Timer, TimerQueue } from "./timers.js";
import { traceLost, traceRelease } from "./tracing.js";

export interface AcquireOptions {
  /** How long the server keeps the lock if it is neither released nor extended, in ms (≥ 1). */
  readonly leaseMs: number;
  /** How long to wait for the lock, in ms. 0 (the default) waits forever. */
  readonly waitMs?: number;
  /** Aborting it cancels the wait (on the server too) and rejects with AbortError. */
  readonly signal?: AbortSignal;
  /**
   * While no connection is usable (lockd restarting, say), keep trying within `waitMs` instead of
   * rejecting with NoServerError once every connection was tried. Default: the client's
   * `waitForReady` option (false). With `waitMs` 0 it tries until `signal` aborts or the client closes.
   */
  readonly waitForReady?: boolean;
  /**
   * Extend the lease whenever a third of it has gone by, until release; `lock.signal` aborts if the
   * lock is lost anyway (extension refused, or no server reachable before the lease ends).
   */
  readonly autoExtend?: boolean;
  /**
   * `"exclusive"` (the default): the only holder. `"shared"`: any number of shared holders at once
   * (readers), never beside an exclusive one; FIFO and phase-fair (docs/protocol.md, "Lock modes").
   * Names as in the Web Locks API. Not with `permits`.
   */
  readonly mode?: "exclusive" | "shared";
  /**
   * Take one of the `permits` permits of a counting semaphore on the key (1 to 65535): at most that
   * many holders at once, each on its own slot (`lock.slot`). Every holder of the key must ask for
   * the same number, or gets LockServerError `LIMIT_MISMATCH`.
   */
  readonly permits?: number;
}

export type TryAcquireOptions = Omit<AcquireOptions, "waitMs" | "waitForReady">;

/** One connection as the client sees it right now. */
export interface ConnectionStatus {
  readonly address: string;
  readonly connection: number;
  readonly state: SlotState;
  /** The node redirected a request: it is a standby, used only while no other node is ready. */
  readonly standby: boolean;
}

// After a grant that came so late that less than this share of the lease is known to remain, the
// lease is extended once before the lock is handed out, so a lock never arrives nearly expired.
const REFRESH_BELOW_FRACTION = 2 / 3;
// A probe for a grant whose reply was lost asks for the shortest lease: if it wins the key afresh it
// holds it for 1 ms at most before the release that follows.
const PROBE_LEASE_MS = 1;

/**
 * A client for one lockd deployment: one or more addresses, one persistent connection each (two for
 * a single address), pipelined requests, failover, release retries. Create one per process and share
 * it; every method may be called concurrently.
 */
export class LockClient implements AsyncDisposable {
  readonly #options: ResolvedOptions;
  readonly #timers: TimerQueue;
  readonly #events = new Emitter();
  readonly #router: SlotRouter;
  readonly #ids = new RequestIds();
  // Tracked for close(): acquires in progress (and given-up ones whose last attempt is unanswered:
  // a late grant must be released), locks held, releases and other retries in progress, and
  // extensions in progress (ended at close, not waited for: close releases the locks anyway).
  readonly #pending = new LinkedSet<AcquireOp<Lock>>();
  readonly #held = new LinkedSet<Lock>();
  readonly #background = new LinkedSet<RetryingRequest>();
  readonly #extensions = new LinkedSet<RetryingRequest>();
  // Told when close() begins, before their locks are released.
  readonly #leaderships = new Set<Leadership>();
  /** Resolved when #pending or #background shrinks: close() waits for both to empty. */
  #shrunk: Array<() => void> = [];
  readonly #backend: LockBackend;
  readonly #acquireContext: AcquireContext<Lock>;
  readonly #retryPolicy: RetryPolicy;
  #closing: Promise<void> | undefined;
  /** Iterators `observe()` handed out that have not ended. */
  readonly #observers = new Set<KeyObserver>();
  readonly #observeContext: ObserveContext;
  #closed = false;

  constructor(options: LockClientOptions) {
    this.#options = resolveOptions(options);
    this.#timers = this.#options.timers ?? new TimerQueue();
    this.#router = new SlotRouter(this.#options, this.#timers, this.#events);
    // Only the simulator's negative control (testMutation) retries under a new id.
    const freshId = this.#options.testMutation === "fresh-retry-id" ? () => this.#ids.next() : undefined;
    this.#retryPolicy = {
      windowMs: this.#options.releaseRetryMs,
      intervalMs: this.#options.retryIntervalMs,
      freshId,
    };
    this.#backend = {
      timers: this.#timers,
      extend: (key, token, leaseMs, untilMs, id) => this.#extend(key, token, leaseMs, untilMs, id),
      release: (lock, done) => this.#release(lock, done),
      lost: (lock, error) => this.#lost(lock, error),
    };
    this.#acquireContext = {
      router: this.#router,
      timers: this.#timers,
      retryIntervalMs: this.#options.retryIntervalMs,
      random: this.#options.random ?? Math.random,
      freshId,
      granted: (op, token, leaseStartBound, receivedAt, slot) =>
        this.#granted(op, token, leaseStartBound, receivedAt, slot),
      finished: (op) => {
        if (this.#pending.delete(op)) this.#notifyShrunk();
      },
      releaseUnwanted: (key, token, id) => this.#releaseUnwanted(key, token, id),
      releaseIfGranted: (key, id, mode) => this.#releaseIfGranted(key, id, mode),
      retried: (spec, attempt, error) => {
        this.#events.emit("retry", { key: spec.key, id: spec.id, attempt, error });
      },
    };
    this.#observeContext = {
      timers: this.#timers,
      retryIntervalMs: this.#options.retryIntervalMs,
      subscribe: (key, done) =>
        this.#retrying(
          { op: "O", key },
          undefined,
          (retrying, error) => done(retrying.reply, retrying.ticket?.connection, error),
          false,
        ),
      ended: (observer) => this.#observers.delete(observer),
    };
  }

  /**
   * Waits for the lock on `key` (up to `waitMs`; forever by default) and resolves with it. Rejects with
   * LockTimeoutError when the wait runs out, AbortError when `signal` aborts, NoServerError when every
   * connection was tried, InvalidArgumentError (nothing sent) for a bad key or duration, and
   * LockLostError when a grant that came late was lost before it could be handed out (its one
   * refresh extension was refused or not confirmed in time; nothing is held, acquiring again is safe).
   */
  acquire(key: string, options: AcquireOptions): Promise<Lock> {
    return this.#acquire("A", key, options) as Promise<Lock>;
  }

  /**
   * Waits for every key of `keys` at once (a bundle, `B`: docs/protocol.md, "Bundles") and resolves
   * with one Lock for them all: one token, one lease, `lock.keys` sorted, released and extended as
   * one. Two bundles never deadlock each other, whatever order their keys are listed in. Rejects as
   * `acquire` does, and with LockServerError `TOO_MANY_BUNDLE_KEYS` (more keys than the server
   * allows) or `KIND_MISMATCH`; with a slot map, keys of different slots reject with
   * LockServerError `CROSS_SLOT` before anything is sent (tag them: `{acct}:a`, `{acct}:b`).
   */
  acquireAll(keys: readonly string[], options: AcquireOptions): Promise<Lock> {
    let bundle: string[];
    try {
      bundle = bundleKeys(keys, this.#options.maxKeyBytes, this.#router.map);
      if (options?.mode !== undefined && options.mode !== "exclusive")
        throw new InvalidArgumentError("a bundle holds its keys exclusively: no mode");
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#acquire("A", bundle[0]!, options, bundle) as Promise<Lock>;
  }

  /** Takes the lock only if it is free right now (nobody holds it or waits for it); null if not. */
  tryAcquire(key: string, options: TryAcquireOptions): Promise<Lock | null> {
    return this.#acquire("Y", key, options);
  }

  /**
   * Acquires `key`, runs `work` with the lock and releases it when `work` settles, whether it returns
   * or throws. Resolves with what `work` returns. If `work` throws, its error is what rejects, even if
   * the release fails too (the lease then frees the key).
   */
  async withLock<T>(key: string, options: AcquireOptions, work: (lock: Lock) => Promise<T> | T): Promise<T> {
    const lock = await this.acquire(key, options);
    let result: T;
    try {
      result = await work(lock);
    } catch (error) {
      await lock.release().catch(() => {});
      throw error;
    }
    await lock.release();
    return result;
  }

  /**
   * Campaigns for leadership of `key` and resolves once elected: the leader is the lock's holder, and
   * `leader.term` is its fencing token (docs: README.md, "Leader election"). The lease is extended
   * while leading; `leader.signal` aborts and `leader.lost` resolves when leadership ends. Rejects
   * as acquire() does (AbortError when `signal` aborts, LockTimeoutError when `waitMs` runs out).
   */
  elect(key: string, options: ElectOptions): Promise<Leadership> {
    return elect(
      {
        acquire: (lockKey, acquireOptions) => this.acquire(lockKey, acquireOptions),
        track: (leadership) => this.#leaderships.add(leadership),
        forget: (leadership) => this.#leaderships.delete(leadership),
      },
      key,
      options,
    );
  }

  /**
   * Who holds `key`, now and at every change: an async iterator of holder states
   * (`{ key, held, token, mode, holders }`; the token is a leadership term when the key elects a
   * leader). The first state is the current one; after a reconnect, failover or handoff the key is
   * watched again on the new active and its state yielded if it changed. Ends when `signal` aborts,
   * on `break`, or when the client closes; throws the server's refusal (`TOO_MANY_WATCHES`…).
   * Throws InvalidArgumentError at once for a bad key.
   */
  observe(key: string, options: ObserveOptions = {}): AsyncIterableIterator<HolderState> {
    checkKey(key, this.#options.maxKeyBytes);
    const observer = new KeyObserver(key, this.#observeContext, options.signal);
    if (this.#closing !== undefined) observer.end();
    else this.#observers.add(observer);
    return observer;
  }

  /**
   * The key slot (0 to 16383) of `key`: with several clusters over one key space, keys of one slot
   * are served by one cluster. Keys that must go together share a `{tag}` (docs/protocol.md, "Key slots").
   */
  slotOf(key: string): number {
    return keySlot(key);
  }

  /** A snapshot of every connection slot. */
  get connections(): readonly ConnectionStatus[] {
    return this.#router.transports
      .flatMap((transport) => transport.pool.slots)
      .map((slot) => ({
        address: slot.address,
        connection: slot.index,
        state: slot.state,
        standby: slot.standby,
      }));
  }

  get closed(): boolean {
    return this.#closing !== undefined;
  }

  on<K extends ClientEventName>(name: K, listener: ClientEventListener<K>): this {
    this.#events.on(name, listener);
    return this;
  }

  off<K extends ClientEventName>(name: K, listener: ClientEventListener<K>): this {
    this.#events.off(name, listener);
    return this;
  }

  once<K extends ClientEventName>(name: K, listener: ClientEventListener<K>): this {
    this.#events.once(name, listener);
    return this;
  }

  /**
   * Closes the client: pending acquires reject with ClientClosedError (and are cancelled on the
   * server), held locks are released, and once the servers have answered (or `releaseRetryMs` has
   * passed) the connections close. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutDown();
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #acquire(
    mode: "A" | "Y",
    key: string,
    options: AcquireOptions,
    keys?: readonly string[],
  ): Promise<Lock | null> {
    let op: AcquireOp<Lock>;
    try {
      if (this.#closing !== undefined) throw new ClientClosedError();
      checkKey(key, this.#options.maxKeyBytes);
      const leaseMs = checkDuration("leaseMs", options?.leaseMs, 1);
      const waitMs =
        mode === "Y" || options.waitMs === undefined ? 0 : checkDuration("waitMs", options.waitMs, 0);
      const waitForReady =
        mode === "A" && (checkFlag("waitForReady", options.waitForReady) ?? this.#options.waitForReady);
      const signal = options.signal;
      if (signal?.aborted) throw new AbortError(`acquire of ${JSON.stringify(key)}`, signal.reason);
      const lockMode = checkLockMode(options);
      const id = this.#ids.next();
      const spec: AcquireSpec = { mode, lockMode, key, leaseMs, waitMs, id, waitForReady, keys };
      op = new AcquireOp(spec, this.#acquireContext, signal);
    } catch (error) {
      return Promise.reject(error);
    }
    // An op can finish inside its constructor (no connection at all): then there is nothing to track.
    if (!op.finished) this.#pending.add(op);
    if (options.signal === undefined && !options.autoExtend) return op.promise;
    return op.promise.then((lock) => this.#handOut(lock, options));
  }

  /** A grant becomes a Lock; one granted after a long wait gets a fresh lease first. */
  #granted(
    op: AcquireOp<Lock>,
    token: bigint,
    leaseStartBound: number,
    receivedAt: number,
    slot: number | undefined,
  ): Lock | Promise<Lock> {
    const { key, leaseMs, id, lockMode } = op.spec;
    const expiresAt = leaseStartBound + leaseMs;
    const late = expiresAt - receivedAt < leaseMs * REFRESH_BELOW_FRACTION;
    const hold = {
      mode: lockMode.kind,
      slot,
      permits: lockMode.kind === "permit" ? lockMode.limit : undefined,
      keys: op.spec.keys,
    };
    const lock = Lock.create(this.#backend, key, token, leaseMs, expiresAt, id, late, hold);
    op.trace?.heldBy(lock);
    this.#held.add(lock);
    if (!late) return lock;
    // The lease is only known to run from the first write, and most of it may look spent (or past)
    // after a long wait: one extension restarts it from a known time. If that fails the lock is
    // lost before anyone saw it, and the call rejects (LockLostError when refused or too late).
    return lock.refresh().then(
      () => {
        // Only close() lets go of a lock nobody has been handed yet.
        if (lock.state !== "held") throw new ClientClosedError();
        return lock;
      },
      (error: unknown) => {
        lock.release().catch(() => {});
        // Refused with a code (SLOT_MOVING: the key's slot began moving to another cluster, which
        // extends nothing there): lost all the same, as refused refreshes are, and released above.
        throw error instanceof LockServerError
          ? new LockLostError(key, token, "the server refused to refresh a late grant", { cause: error })
          : error;
      },
    );
  }

  /** The last step for calls with a signal or autoExtend: the caller may have aborted meanwhile. */
  #handOut(lock: Lock | null, options: AcquireOptions): Lock | null {
    if (lock === null) return null;
    const signal = options.signal;
    if (signal?.aborted || this.#closing !== undefined) {
      lock.release().catch(() => {});
      throw signal?.aborted
        ? new AbortError(`acquire of ${JSON.stringify(lock.key)}`, signal.reason)
        : new ClientClosedError();
    }
    if (options.autoExtend) lock.startAutoExtend();
    return lock;
  }

  /**
   * Sends an idempotent request with retries, tracked so that close() ends it; and waits for it,
   * unless it is an extension (`owedAtClose` false).
   */
  #retrying(
    request: Request,
    untilMs: number | undefined,
    done: RetryCallback,
    owedAtClose = true,
  ): RetryingRequest {
    const retrying = new RetryingRequest(
      this.#router,
      this.#timers,
      request,
      this.#retryPolicy,
      untilMs,
      this.#retryOver,
      done,
    );
    // After close there is no connection and no timer left to retry with.
    if (this.#closed) retrying.abandon(new ClientClosedError());
    else if (!retrying.over) (owedAtClose ? this.#background : this.#extensions).add(retrying);
    return retrying;
  }

  readonly #retryOver: RetryCallback = (retrying) => {
    if (this.#background.delete(retrying)) this.#notifyShrunk();
    else this.#extensions.delete(retrying);
  };

  #notifyShrunk(): void {
    const waiters = this.#shrunk;
    this.#shrunk = [];
    for (const resolve of waiters) resolve();
  }

  #releaseUnwanted(key: string, token: bigint, id: string | undefined): void {
    this.#retrying(
      id === undefined ? { op: "R", key, token } : { op: "R", key, token, id },
      undefined,
      () => {},
    );
  }

  #releaseIfGranted(key: string, id: string, mode: LockMode): void {
    // Y (W, in the acquire's mode) with the same id answers with the grant the id holds, if any:
    // release that token. If the key is free instead (or has room beside its holders), the probe
    // wins it for 1 ms and releases it too; if it cannot be had now, N.
    const probe: Request =
      mode.kind === "exclusive"
        ? { op: "Y", key, leaseMs: PROBE_LEASE_MS, id }
        : { op: "W", key, mode, leaseMs: PROBE_LEASE_MS, id };
    this.#retrying(probe, undefined, ({ reply }) => {
      if (reply?.kind === "Y" || reply?.kind === "W") this.#releaseUnwanted(key, reply.token, id);
    });
  }

  #extend(key: string, token: bigint, leaseMs: number, untilMs: number, id: string): Promise<number | false> {
    return new Promise((resolve, reject) => {
      if (this.#closing !== undefined) throw new ClientClosedError();
      checkDuration("leaseMs", leaseMs, 1);
      const request: Request = { op: "X", key, token, leaseMs, id };
      const done: RetryCallback = ({ reply, ticket }, error) => {
        if (error !== undefined) reject(error);
        else if (reply?.kind !== "X") reject(new ProtocolError(`unexpected ${reply?.kind} reply to X`));
        else resolve(reply.extended ? ticket!.writtenAt : false);
      };
      this.#retrying(request, untilMs, done, false);
    });
  }

  #release(lock: Lock, done: (error: Error | undefined, released: boolean) => void): void {
    this.#held.delete(lock);
    // The id proves ownership when the release goes out on another connection than the grant came on.
    const request: Request = { op: "R", key: lock.key, token: lock.token, id: lock.requestId };
    done = traceRelease(lock, done);
    this.#retrying(request, undefined, ({ reply, firstLostWriteAt }, error) => {
      if (error !== undefined) {
        done(error, false);
      } else if (reply?.kind !== "R") {
        done(new ProtocolError(`unexpected ${reply?.kind} reply to R`), false);
      } else {
        // `R key 0` after an attempt whose reply was lost most likely means that attempt released
        // the lock: count it as ours if that attempt went out while the lease still ran.
        done(undefined, reply.released || firstLostWriteAt < lock.expiresAt);
      }
    });
  }

  #lost(lock: Lock, error: LockLostError): void {
    this.#held.delete(lock);
    traceLost(lock, error);
    this.#events.emit("lockLost", { key: lock.key, token: lock.token, error });
  }

  async #shutDown(): Promise<void> {
    for (const leadership of [...this.#leaderships]) leadership.clientClosing();
    for (const observer of [...this.#observers]) observer.end();
    for (const op of this.#pending.toArray()) op.giveUp(new ClientClosedError());
    for (const lock of this.#held.toArray()) lock.release().catch(() => {});
    const deadline = this.#timers.clock.now() + this.#options.releaseRetryMs;
    await this.#quiesce(deadline);
    this.#closed = true;
    for (const retrying of [...this.#background.toArray(), ...this.#extensions.toArray()])
      retrying.abandon(new ClientClosedError());
    this.#router.close();
    this.#timers.stop();
    this.#events.emit("close", {});
  }

  /**
   * Waits until `deadline` at most for what close() owes the servers: releases and other retries to
   * finish, and the answers to given-up acquires (a grant that won the race is released). Not for
   * extensions (close() releases the locks, and a lock already lost on a stopped server would keep
   * its last one unanswered until the deadline), pings or probes: nothing would use their answers.
   */
  async #quiesce(deadline: number): Promise<void> {
    while (this.#background.size > 0 || this.#pending.size > 0) {
      const left = deadline - this.#timers.clock.now();
      if (left <= 0) return;
      let timer: Timer | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.#shrunk.push(resolve)),
        new Promise<void>((resolve) => (timer = this.#timers.after(left, resolve))),
      ]);
      timer?.cancel();
    }
  }
}
