import { ClientClosedError, LockLostError } from "./errors.js";
import type { Lock } from "./lock.js";

/**
 * Leader election on one key: a campaign is an acquire that waits, the leader is the holder, and
 * the term is the grant's fencing token. Tokens only grow (across failover too), so every new
 * leader's term is above every earlier one, and a store that fences writes by token (@lock/fence)
 * turns away a deposed leader's late writes.
 *
 * Nothing here re-implements the lease: a Leadership is a Lock acquired with `autoExtend`, and
 * loses exactly when that Lock is lost, or when it resigns or its client closes.
 *
 * Election answers "am I the leader?". Following who leads without standing (the holder and term of
 * a key, as they change) is a watch on the key, not a campaign: client.observe(key), apart from this.
 */

export interface ElectOptions {
  /** The leader's lease, in ms (≥ 1): renewed while leading; a leader cut off for this long is deposed. */
  readonly leaseMs: number;
  /** Aborting it ends the campaign (on the server too) with AbortError. It does not end a leadership: resign() does. */
  readonly signal?: AbortSignal;
  /** How long to campaign, in ms, before rejecting with LockTimeoutError. 0 (the default): until elected. */
  readonly waitMs?: number;
  /**
   * Keep campaigning while no lockd can be reached (a restart, a failover) instead of rejecting with
   * NoServerError. Default true: a standby candidate should outlast its servers' restarts.
   */
  readonly waitForReady?: boolean;
}

/** Why a leadership ended. */
export type LeadershipLossReason =
  /** The lease ran out before an extension was confirmed (the leader was cut off from the servers). */
  | "lease-lost"
  /** The server refused an extension: the lease had already ended there, so someone else may lead. */
  | "extension-refused"
  /** resign() was called. */
  | "resigned"
  /** The client was closed. */
  | "client-closed";

export interface LeadershipLoss {
  readonly key: string;
  readonly term: bigint;
  readonly reason: LeadershipLossReason;
  /**
   * A LockLostError (code LOCK_LOST) that says why, also `leader.signal.reason`. For "lease-lost"
   * and "extension-refused" it is the lock's own loss, with its cause.
   */
  readonly error: LockLostError;
}

export type LeadershipListener = (loss: LeadershipLoss) => void;

/** The acquire a campaign makes: LockClient.acquire's options, as elect() sets them. */
export interface CampaignOptions {
  readonly leaseMs: number;
  readonly waitMs: number;
  readonly waitForReady: boolean;
  readonly autoExtend: true;
  readonly signal?: AbortSignal;
}

/** What elect() needs from its client. */
export interface ElectionBackend {
  acquire(key: string, options: CampaignOptions): Promise<Lock>;
  /** Keeps `leadership` until `forget`, so that closing the client can tell it first. */
  track(leadership: Leadership): void;
  forget(leadership: Leadership): void;
}

/** Campaigns for `key` and resolves with the leadership once elected (see LockClient.elect). */
export async function elect(
  backend: ElectionBackend,
  key: string,
  options: ElectOptions,
): Promise<Leadership> {
  const { leaseMs, signal, waitMs = 0, waitForReady = true } = options ?? ({} as Partial<ElectOptions>);
  const lock = await backend.acquire(key, {
    leaseMs: leaseMs as number,
    waitMs,
    waitForReady,
    autoExtend: true,
    ...(signal === undefined ? {} : { signal }),
  });
  // The lock can go between its grant and this line only to close() (which releases it) or to a
  // loss; either way nobody is told they lead.
  const state = lock.state;
  if (state === "lost") throw lock.signal.reason as LockLostError;
  if (state !== "held") throw new ClientClosedError();
  return Leadership.create(lock, backend);
}

/**
 * Leadership of a key, from election until it is lost, resigned or the client closes. `term` is
 * the grant's fencing token: hand it to every write the leader makes (see @lock/fence).
 *
 * Loss is reported once, promptly and everywhere at the same moment: `signal` aborts, `lost`
 * resolves, and each `lost` listener is called, in that order, synchronously when the lease
 * deadline passes unconfirmed (a timer; no one needs to read the leadership), when the server
 * refuses an extension, when resign() is called (before its release goes out, so work stops
 * first), or when close() begins. A listener added after the loss is called on a microtask.
 *
 * Concurrency: resign() is idempotent (later calls return the first call's promise); a loss that
 * happens while a resignation is in flight is not reported again.
 */
export class Leadership implements AsyncDisposable {
  readonly key: string;
  /** The term: the grant's fencing token, above every earlier leader's term of this key. */
  readonly term: bigint;
  readonly leaseMs: number;
  /** Resolves (never rejects) when the leadership ends, with why. */
  readonly lost: Promise<LeadershipLoss>;
  readonly #lock: Lock;
  readonly #backend: ElectionBackend;
  readonly #controller = new AbortController();
  readonly #listeners = new Set<LeadershipListener>();
  #resolveLost!: (loss: LeadershipLoss) => void;
  #loss: LeadershipLoss | undefined;
  #resignation: Promise<boolean> | undefined;

  /** @internal Leaderships come from LockClient.elect. */
  static create(lock: Lock, backend: ElectionBackend): Leadership {
    return new Leadership(lock, backend);
  }

  private constructor(lock: Lock, backend: ElectionBackend) {
    this.#lock = lock;
    this.#backend = backend;
    this.key = lock.key;
    this.term = lock.token;
    this.leaseMs = lock.leaseMs;
    this.lost = new Promise((resolve) => (this.#resolveLost = resolve));
    backend.track(this);
    // Lock.signal aborts synchronously at the loss, whatever declared it (its expiry timer, a
    // refused extension, a read that found the deadline past).
    const lockSignal = lock.signal;
    const onLockLost = () =>
      this.#lose(lock.refused ? "extension-refused" : "lease-lost", lockSignal.reason as LockLostError);
    if (lockSignal.aborted) onLockLost();
    else lockSignal.addEventListener("abort", onLockLost, { once: true });
  }

  /** True while leading: not lost, resigned or closed, and the lease has not run out. */
  get leading(): boolean {
    // Reading the lock declares a loss that is due, so `leading` and `signal` agree.
    return this.#lock.held && this.#loss === undefined;
  }

  /** Aborts when the leadership ends, for any reason; the reason is the LeadershipLoss's error. */
  get signal(): AbortSignal {
    void this.#lock.held;
    return this.#controller.signal;
  }

  /** Monotonic ms (`performance.now()` clock) at which the lease ends, as far as the client knows. */
  get expiresAt(): number {
    return this.#lock.expiresAt;
  }

  /** Calls `listener` once when the leadership ends (on a microtask if it already has). */
  on(event: "lost", listener: LeadershipListener): this {
    if (event !== "lost") return this;
    const loss = this.#loss;
    if (loss === undefined) this.#listeners.add(listener);
    else queueMicrotask(() => listener(loss));
    return this;
  }

  off(event: "lost", listener: LeadershipListener): this {
    if (event === "lost") this.#listeners.delete(listener);
    return this;
  }

  /**
   * Steps down: the leadership ends at once ("resigned": `signal` aborts, `lost` resolves), then the
   * lock is released so that another candidate is elected without waiting for the lease. Resolves
   * true if it was still leading, false if it had already lost. Rejects with NoServerError if no
   * server confirmed the release; the lease then ends the term.
   */
  resign(): Promise<boolean> {
    if (this.#resignation !== undefined) return this.#resignation;
    const wasLeading = this.leading;
    this.#lose("resigned", new LockLostError(this.key, this.term, "resigned"));
    this.#resignation = wasLeading ? this.#lock.release() : Promise.resolve(false);
    return this.#resignation;
  }

  /** `await using leader = await client.elect(…)` resigns at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.resign();
  }

  /** @internal close() began: the client releases the lock itself. */
  clientClosing(): void {
    this.#lose("client-closed", new LockLostError(this.key, this.term, "the client was closed"));
  }

  #lose(reason: LeadershipLossReason, error: LockLostError): void {
    if (this.#loss !== undefined) return;
    const loss: LeadershipLoss = { key: this.key, term: this.term, reason, error };
    this.#loss = loss;
    this.#backend.forget(this);
    this.#controller.abort(error);
    this.#resolveLost(loss);
    const listeners = [...this.#listeners];
    this.#listeners.clear();
    for (const listener of listeners) {
      try {
        listener(loss);
      } catch (error) {
        // As the client's events do: the others still run, and the error is not swallowed.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
