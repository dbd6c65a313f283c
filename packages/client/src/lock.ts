import { LockLostError } from "./errors.js";
import { type Linked, NEXT, OWNER, PREV } from "./linked-set.js";
import type { Timer, TimerQueue } from "./timers.js";

/** What a Lock needs from its client. The client implements it over its connections. */
export interface LockBackend {
  readonly timers: TimerQueue;
  /**
   * Sends `X key token leaseMs`, retrying over live connections until `untilMs` (at least once).
   * Resolves with the monotonic time the confirmed attempt was written, or false if the server said
   * the token no longer holds the key. Rejects if no server confirmed it by `untilMs`.
   */
  extend(key: string, token: bigint, leaseMs: number, untilMs: number, id: string): Promise<number | false>;
  /** Sends `R key token` with the release retry policy; `done` gets whether we still held it. */
  release(lock: Lock, done: (error: Error | undefined, released: boolean) => void): void;
  /** The lock was lost (not released): the client forgets it and tells its listeners. */
  lost(lock: Lock, error: LockLostError): void;
}

/**
 * `held` until released or lost. `releasing` while the release is in flight; `released` once it is
 * done, whatever the outcome (a release that could not reach a server leaves the lock to its lease).
 */
export type LockState = "held" | "releasing" | "released" | "lost";

// autoExtend renews when a third of the lease has gone by, leaving two thirds for retries.
const RENEW_AT_FRACTION = 1 / 3;

/**
 * A held lock: its key, fencing token and lease deadline, and the means to extend and release it.
 *
 * The deadline (`expiresAt`, monotonic ms like `performance.now()`) counts from when the request that
 * started the lease was written, not from when its reply arrived: the server starts the lease when
 * it grants, which is after the write, so the client's deadline is never later than the server's.
 *
 * Once the deadline passes without a confirmed extension the lock is lost, and everything says so
 * together: a timer at the deadline declares the loss (the signal aborts, the client emits
 * `lockLost`) whether or not anyone reads the lock, and every read checks the deadline first, so
 * `state`, `held` and `signal` agree even in the moment before that timer runs.
 *
 * Concurrency: extend() calls may overlap (the latest confirmed deadline wins); release() is
 * idempotent (later calls return the first call's promise) and ends every extension: a refusal
 * that arrives after release() started does not count as a loss.
 */
// Linked (the client's intrusive list) is structural and left out of `implements`: its members are
// internal, stripped from the published .d.ts, where the clause would no longer hold.
/** @internal How a grant holds its key (Lock.mode, slot, permits). */
export interface LockHold {
  readonly mode: "exclusive" | "shared" | "permit";
  readonly slot: number | undefined;
  readonly permits: number | undefined;
  /** A bundle's keys (acquireAll), sorted; undefined for one key. */
  readonly keys?: readonly string[] | undefined;
}

const EXCLUSIVE_HOLD: LockHold = { mode: "exclusive", slot: undefined, permits: undefined };

export class Lock implements AsyncDisposable {
  /** @internal */
  [PREV]: Linked | undefined;
  /** @internal */
  [NEXT]: Linked | undefined;
  /** @internal */
  [OWNER]: Linked[typeof OWNER];
  /** The key; for a bundle (`acquireAll`), the first of its keys, through which it is released and extended. */
  readonly key: string;
  /**
   * Every key the lock holds: `[key]`, or a bundle's keys (`acquireAll`) in code-point order, all
   * held under the one `token` and lease, released and extended as one.
   */
  readonly keys: readonly string[];
  /** The fencing token: pass it to the protected resource (see @lock/fence). */
  readonly token: bigint;
  /** The lease asked for, in ms: what autoExtend renews to and extend() defaults to. */
  readonly leaseMs: number;
  /**
   * How the lock holds its key: `"exclusive"` (the only holder), `"shared"` (one of any number of
   * shared holders) or `"permit"` (one of `permits` permits of a semaphore, on `slot`).
   */
  readonly mode: "exclusive" | "shared" | "permit";
  /** A permit's slot, 0 to `permits` − 1: no two live permits of the key share one. Undefined otherwise. */
  readonly slot: number | undefined;
  /** The semaphore's number of permits, for a permit; undefined otherwise. */
  readonly permits: number | undefined;
  readonly #backend: LockBackend;
  #expiresAt: number;
  #state: LockState = "held";
  #controller: AbortController | undefined;
  #lostError: LockLostError | undefined;
  #refused = false;
  #expiryTimer: Timer | undefined;
  #renewTimer: Timer | undefined;
  #autoExtend = false;
  // Whether the deadline is enforced yet: not while a late grant is refreshed (see refresh()).
  #watching = false;
  #release: Promise<boolean> | undefined;
  /** @internal The acquire's request id: lockd's proof that a release or extension is the holder's. */
  readonly requestId: string;

  /**
   * @internal Locks come from LockClient.acquire / tryAcquire / withLock. `refreshFirst`: the grant
   * came so late that `expiresAt` may already have passed; the client calls refresh() before
   * handing the lock out, and the deadline is enforced from then on.
   */
  static create(
    backend: LockBackend,
    key: string,
    token: bigint,
    leaseMs: number,
    expiresAt: number,
    requestId: string,
    refreshFirst = false,
    hold: LockHold = EXCLUSIVE_HOLD,
  ): Lock {
    return new Lock(backend, key, token, leaseMs, expiresAt, requestId, refreshFirst, hold);
  }

  // Private, with the factory above stripped from the .d.ts: an application cannot make a Lock.
  private constructor(
    backend: LockBackend,
    key: string,
    token: bigint,
    leaseMs: number,
    expiresAt: number,
    requestId: string,
    refreshFirst: boolean,
    hold: LockHold,
  ) {
    this.#backend = backend;
    this.key = key;
    this.keys = hold.keys ?? [key];
    this.token = token;
    this.leaseMs = leaseMs;
    this.mode = hold.mode;
    this.slot = hold.slot;
    this.permits = hold.permits;
    this.#expiresAt = expiresAt;
    this.requestId = requestId;
    if (!refreshFirst) this.#watchLease();
  }

  /** Monotonic ms (the `performance.now()` clock) at which the lease ends, as far as the client knows. */
  get expiresAt(): number {
    return this.#expiresAt;
  }

  /**
   * @internal Whether the loss was a refusal (the server answered an extension X 0, or the
   * automatic extension failed outright) rather than the lease running out unconfirmed: elections
   * report the two apart.
   */
  get refused(): boolean {
    return this.#refused;
  }

  /** Lease left, in ms (0 when it ran out). */
  get remainingMs(): number {
    return Math.max(0, this.#expiresAt - this.#backend.timers.clock.now());
  }

  get state(): LockState {
    this.#expireIfDue();
    return this.#state;
  }

  /** True while the lock is held and its lease has not run out. */
  get held(): boolean {
    this.#expireIfDue();
    return this.#state === "held" && this.remainingMs > 0;
  }

  /**
   * Aborts when the lock is lost: an extension was refused, or the lease ran out before one was
   * confirmed. The reason is a LockLostError. Not aborted by release(). Pass it to the work the lock
   * protects so that work stops when the lock goes.
   */
  get signal(): AbortSignal {
    this.#expireIfDue();
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#lostError !== undefined) this.#controller.abort(this.#lostError);
    }
    return this.#controller.signal;
  }

  /**
   * Sets the lease to `leaseMs` (default: the acquired lease) from now. Rejects with LockLostError if
   * the server no longer holds the lock for this token, or if no server confirmed the extension
   * before the lease ran out (the lock is then lost and `signal` aborts).
   */
  async extend(leaseMs: number = this.leaseMs): Promise<void> {
    this.#expireIfDue();
    if (this.#state === "lost") throw this.#lostError!;
    if (this.#state !== "held") throw new LockLostError(this.key, this.token, "it was released");
    const now = this.#backend.timers.clock.now();
    let writtenAt: number | false;
    try {
      writtenAt = await this.#backend.extend(
        this.key,
        this.token,
        leaseMs,
        Math.max(now, this.#expiresAt),
        this.requestId,
      );
    } catch (error) {
      // Lost meanwhile (the deadline passed while the attempts went unanswered): the loss is the
      // answer. Released meanwhile: the error as it is.
      if (this.#state !== "held") throw this.#lostError ?? error;
      if (this.#backend.timers.clock.now() < this.#expiresAt) throw error;
      throw this.#lose("no server confirmed an extension before the lease ran out", error);
    }
    // A confirmation that arrives after the deadline comes too late, as it would had the expiry
    // timer run on time: whether the lock survives must not depend on what was read meanwhile.
    this.#expireIfDue();
    if (this.#state !== "held") {
      if (this.#state === "lost") throw this.#lostError!;
      return;
    }
    if (writtenAt === false) throw this.#lose("the server refused the extension (X 0)", undefined, true);
    this.#expiresAt = Math.max(this.#expiresAt, writtenAt + leaseMs);
  }

  /**
   * Releases the lock (retried over live connections for a while if none answers). Resolves true if
   * this lock still held the key, false if it had already gone (lease ran out, or lost). Rejects with
   * NoServerError if no server answered in time: the server then frees the key when the lease ends.
   */
  release(): Promise<boolean> {
    if (this.#release !== undefined) return this.#release;
    this.#expireIfDue();
    this.#stopTimers();
    if (this.#state === "lost") {
      this.#release = Promise.resolve(false);
      return this.#release;
    }
    this.#state = "releasing";
    this.#release = new Promise((resolve, reject) =>
      this.#backend.release(this, (error, released) => {
        this.#state = "released";
        if (error === undefined) resolve(released);
        else reject(error);
      }),
    );
    return this.#release;
  }

  /** `await using lock = await client.acquire(…)` releases at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /**
   * @internal Renews the lease whenever a third of it has gone by, until release or loss. Renewals
   * that fail for want of a server are retried by the backend until the lease ends.
   */
  startAutoExtend(): void {
    if (this.#autoExtend || this.#state !== "held") return;
    this.#autoExtend = true;
    this.#scheduleRenewal();
  }

  /**
   * @internal The one extension of a late grant (constructed with `refreshFirst`), before the client
   * hands it out: the lease restarts from the extension's write, and the deadline is enforced from
   * then on. Rejects as extend() does; a refusal, or no confirmation in time, loses the lock.
   */
  async refresh(): Promise<void> {
    await this.extend();
    if (this.#state !== "held") return;
    this.#watchLease();
    // Confirmed, but only after the lease it set ran out (the reply was slow): lost, as extend()
    // would have judged it had the deadline been enforced during the refresh.
    this.#expireIfDue();
    // (TypeScript narrowed the state to "held" above; #expireIfDue may have changed it.)
    if ((this.#state as LockState) === "lost") throw this.#lostError!;
  }

  #watchLease(): void {
    this.#watching = true;
    this.#watchExpiry();
  }

  /** The deadline passed before the timer that declares it ran: declare it now. */
  #expireIfDue(): void {
    if (this.#watching && this.#state === "held" && this.#backend.timers.clock.now() >= this.#expiresAt) {
      this.#lose("the lease ran out before it was extended");
    }
  }

  #scheduleRenewal(): void {
    const renewAt = this.#expiresAt - this.leaseMs * (1 - RENEW_AT_FRACTION);
    this.#renewTimer = this.#backend.timers.at(renewAt, () => {
      this.#renewTimer = undefined;
      this.extend().then(
        () => {
          if (this.#state === "held") this.#scheduleRenewal();
        },
        (error: unknown) => {
          // A refusal or a lease run out already lost the lock. Anything else (a server refusing
          // the lease length, say) means the lease cannot be kept: say so now, not at expiry.
          if (this.#state === "held") this.#lose("the automatic extension failed", error, true);
        },
      );
    });
  }

  /** Declares the lock lost when the deadline passes without a confirmed extension. */
  #watchExpiry(): void {
    if (this.#expiryTimer !== undefined || this.#state !== "held") return;
    this.#expiryTimer = this.#backend.timers.at(this.#expiresAt, () => {
      this.#expiryTimer = undefined;
      if (this.#state !== "held") return;
      // An extension may have moved the deadline since this timer was set.
      if (this.#backend.timers.clock.now() < this.#expiresAt) this.#watchExpiry();
      else this.#expireIfDue();
    });
  }

  #lose(reason: string, cause?: unknown, refused = false): LockLostError {
    if (this.#lostError !== undefined) return this.#lostError;
    this.#refused = refused;
    const error = new LockLostError(
      this.key,
      this.token,
      reason,
      cause === undefined ? undefined : { cause },
    );
    this.#lostError = error;
    this.#state = "lost";
    this.#stopTimers();
    this.#controller?.abort(error);
    this.#backend.lost(this, error);
    return error;
  }

  #stopTimers(): void {
    this.#expiryTimer?.cancel();
    this.#renewTimer?.cancel();
    this.#expiryTimer = undefined;
    this.#renewTimer = undefined;
  }
}
