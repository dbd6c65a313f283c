import type { Timer, TimerQueue } from "@lock/deadline-heap";
import type { Clock } from "../engine/clock.js";
import type { CoordinationStore, LeaseInfo, OwnershipLease } from "./store.js";

/** Defaults for `--coordinator-lease` and the margin (docs/operations.md, "With a coordinator"). */
export const DEFAULT_OWNERSHIP_LEASE_MS = 2_000;
/**
 * How long before the lease's end by this node's clock it stops granting. The store keeps a lease
 * at least its length from when it handled the call, which is after this node sent it, so the
 * margin covers only clock-rate drift between this node and the store, and the time between the
 * check before a batch of requests and the last grant of that batch.
 */
export const DEFAULT_OWNERSHIP_MARGIN_MS = 200;

export interface OwnershipOptions {
  readonly store: CoordinationStore;
  /** `--cluster-name`: whose lease this is. */
  readonly cluster: string;
  /** This process: its address and a random incarnation id (a restart is another holder). */
  readonly holder: string;
  readonly leaseMs: number;
  readonly marginMs: number;
  readonly clock: Clock;
  readonly timers: TimerQueue;
  readonly events: OwnershipEvents;
}

export interface OwnershipEvents {
  /**
   * `valid()` may have changed without a call of this node's: a renewal or a spare epoch came
   * back, or the lease ran out by this node's clock (no renewal came back in time).
   */
  validityChanged(): void;
  /** The store says the lease is no longer this node's (it expired there, or `holder` has it). */
  lost(holder: string | undefined): void;
  /** A store call failed: `operation` did not complete (it is retried). */
  unavailable(operation: string, error: unknown): void;
}

/** The name a process holds its cluster's lease under: its address and a random incarnation. */
export function ownershipHolder(address: string, incarnation: string): string {
  return `${address} ${incarnation}`;
}

export interface OwnershipStatus {
  readonly store: string;
  readonly cluster: string;
  /** This process's holder name. */
  readonly holder: string;
  /** This node holds the lease (it may have lapsed by its clock while renewals fail). */
  readonly held: boolean;
  /** It may grant: the lease is valid by this node's clock with the margin. */
  readonly valid: boolean;
  readonly validForMs: number;
  readonly leaseMs: number;
  readonly lastEpoch: bigint | undefined;
  readonly storeCalls: number;
}

/** What `acquire` got: the lease and a fresh epoch, or the holder that has the lease. */
export type AcquireResult =
  | { readonly owned: true; readonly epoch: bigint }
  | { readonly owned: false; readonly holder: string | undefined };

/**
 * This node's ownership of its cluster in the coordination store: the lease that makes it the
 * active, its validity by this node's monotonic clock, its renewal, and the epochs it takes from
 * the store's counter (one at every acquire, a spare for the next exhausted sequence).
 *
 * Validity is conservative: measured from when a call was *sent*, minus the margin, so this node
 * stops granting before the store can let anyone else take the lease. A call whose answer was lost
 * extends nothing here, even if the store did extend the lease.
 */
export class Ownership {
  readonly #options: OwnershipOptions;
  #lease: OwnershipLease | undefined;
  #validUntil = Number.NEGATIVE_INFINITY;
  /** Bumped whenever the lease is given up or lost: answers to older calls are ignored. */
  #generation = 0;
  #renewal: Timer | undefined;
  #expiry: Timer | undefined;
  #renewing = false;
  #spare: bigint | undefined;
  #fetchingSpare = false;
  /** Store calls made (a metric: the store must stay off the data path). */
  storeCalls = 0;
  /** The last epoch taken from the store, for operators. */
  lastEpoch: bigint | undefined;

  constructor(options: OwnershipOptions) {
    this.#options = options;
  }

  get cluster(): string {
    return this.#options.cluster;
  }

  get holder(): string {
    return this.#options.holder;
  }

  /** `--coordinator-lease`: how long the store keeps the lease after a call. */
  get leaseMs(): number {
    return this.#options.leaseMs;
  }

  get description(): string {
    return this.#options.store.description;
  }

  /** A lease is held (it may have lapsed by this node's clock while renewals fail). */
  get held(): boolean {
    return this.#lease !== undefined;
  }

  /**
   * This node may grant now: it holds the lease, the lease is valid by its clock with the margin,
   * and a spare epoch is ready for an exhausted sequence.
   */
  valid(now = this.#options.clock.now()): boolean {
    return this.#lease !== undefined && now < this.#validUntil && this.#spare !== undefined;
  }

  /** How long the lease stays valid by this node's clock (0 if it is not). */
  remainingMs(now = this.#options.clock.now()): number {
    return this.#lease === undefined ? 0 : Math.max(0, Math.round(this.#validUntil - now));
  }

  /**
   * Takes the lease and two epochs above `atLeast` (the first to grant from, the second the spare),
   * or reports who holds it. Rejects if the store could not be reached; an acquire that was given
   * up meanwhile (`release`, `lost`, a later acquire) reports nothing held.
   */
  async acquire(atLeast: bigint): Promise<AcquireResult> {
    const { store, cluster, holder, leaseMs, marginMs, clock } = this.#options;
    const generation = ++this.#generation;
    this.#dropLease();
    const sentAt = clock.now();
    this.storeCalls += 1;
    const outcome = await store.acquireLease(cluster, holder, leaseMs);
    if (!outcome.held) return { owned: false, holder: outcome.holder };
    // Given up meanwhile. Not released: under this holder's name it may be the very lease a later
    // acquire of this node holds now (a late answer to an earlier call); it expires on its own.
    if (generation !== this.#generation) return { owned: false, holder: undefined };
    this.#lease = outcome.lease;
    this.#setValidUntil(sentAt + leaseMs - marginMs);
    this.#scheduleRenewal(leaseMs / 3);
    try {
      this.storeCalls += 1;
      // Both in one call (a promotion waits for it): the epoch to grant from, and the spare above it.
      const spare = await store.takeEpoch(atLeast, 2);
      const epoch = spare - 1n;
      if (generation !== this.#generation) return { owned: false, holder: undefined };
      this.#spare = spare;
      this.#noteEpoch(spare);
      return { owned: true, epoch };
    } catch (error) {
      // A lease this node cannot serve from would keep every other node out: give it back.
      if (generation === this.#generation) await this.release();
      throw error;
    }
  }

  /**
   * An epoch above `above` from the store's counter (an active that learned of a later epoch, or
   * gained slots), and a spare above it in the same call: a spare taken before would be below the
   * new epoch, and a sequence of the new epoch that ran out could not move to it.
   */
  async takeEpoch(above: bigint): Promise<bigint> {
    const generation = this.#generation;
    this.storeCalls += 1;
    const spare = await this.#options.store.takeEpoch(above, 2);
    this.#noteEpoch(spare);
    if (generation === this.#generation) this.#keepSpare(spare);
    return spare - 1n;
  }

  /**
   * The spare epoch, for a sequence that ran out (synchronously: a grant is under way); the next
   * spare is fetched at once. Undefined only if the last fetch has not come back, which `valid`
   * rules out before any batch of grants.
   */
  takeSpare(): bigint | undefined {
    const spare = this.#spare;
    this.#spare = undefined;
    if (spare !== undefined) this.#fetchSpare(spare);
    return spare;
  }

  /** Gives the lease up (a graceful handoff, a shutdown, a step down); resolves once the store answered or failed. */
  async release(): Promise<void> {
    const lease = this.#lease;
    this.#generation += 1;
    this.#dropLease();
    if (lease) await this.#releaseQuietly(lease);
  }

  close(): void {
    this.#generation += 1;
    this.#dropLease();
  }

  /** What operators see (/status): the store, this node's lease and the last epoch taken. */
  status(now = this.#options.clock.now()): OwnershipStatus {
    return {
      store: this.#options.store.description,
      cluster: this.#options.cluster,
      holder: this.#options.holder,
      held: this.held,
      valid: this.valid(now),
      validForMs: this.remainingMs(now),
      leaseMs: this.#options.leaseMs,
      lastEpoch: this.lastEpoch,
      storeCalls: this.storeCalls,
    };
  }

  /** Who holds the lease by the store (one store call; /status asks, never the data path). */
  readHolder(): Promise<LeaseInfo | undefined> {
    this.storeCalls += 1;
    return this.#options.store.readLease(this.#options.cluster);
  }

  /** A spare epoch came back: the highest one is kept (a raise may have taken one above a fetch's). */
  #keepSpare(spare: bigint): void {
    if (this.#spare === undefined || spare > this.#spare) this.#spare = spare;
  }

  /** The highest epoch taken from the store so far, for operators. */
  #noteEpoch(epoch: bigint): void {
    if (this.lastEpoch === undefined || epoch > this.lastEpoch) this.lastEpoch = epoch;
  }

  #dropLease(): void {
    this.#lease = undefined;
    this.#validUntil = Number.NEGATIVE_INFINITY;
    this.#spare = undefined;
    this.#renewal?.cancel();
    this.#renewal = undefined;
    this.#expiry?.cancel();
    this.#expiry = undefined;
  }

  async #releaseQuietly(lease: OwnershipLease): Promise<void> {
    this.storeCalls += 1;
    try {
      await this.#options.store.releaseLease(lease);
    } catch (error) {
      // It expires in the store on its own; a successor waits for that instead.
      this.#options.events.unavailable("release the ownership lease", error);
    }
  }

  #scheduleRenewal(delayMs: number): void {
    this.#renewal?.cancel();
    this.#renewal = this.#options.timers.after(delayMs, () => {
      this.#renewal = undefined;
      this.#renew();
    });
  }

  #renew(): void {
    const lease = this.#lease;
    if (lease === undefined || this.#renewing) return;
    const { store, leaseMs, marginMs, clock, events } = this.#options;
    const generation = this.#generation;
    const sentAt = clock.now();
    this.#renewing = true;
    this.storeCalls += 1;
    store.renewLease(lease).then(
      (outcome) => {
        this.#renewing = false;
        if (generation !== this.#generation) return;
        if (!outcome.held) {
          this.#generation += 1;
          this.#dropLease();
          events.lost(outcome.holder);
          return;
        }
        const wasValid = this.valid();
        this.#setValidUntil(sentAt + leaseMs - marginMs);
        this.#scheduleRenewal(leaseMs / 3);
        if (!wasValid) events.validityChanged();
      },
      (error: unknown) => {
        this.#renewing = false;
        if (generation !== this.#generation) return;
        events.unavailable("renew the ownership lease", error);
        // Sooner than the usual interval: the lease runs out meanwhile.
        this.#scheduleRenewal(leaseMs / 10);
      },
    );
  }

  /** The lease is valid until `at`; a timer marks its end, so a node with no traffic stops too. */
  #setValidUntil(at: number): void {
    if (at <= this.#validUntil) return;
    this.#validUntil = at;
    this.#expiry?.cancel();
    const { timers, clock } = this.#options;
    this.#expiry = timers.after(Math.max(0, at - clock.now()), () => {
      this.#expiry = undefined;
      this.#options.events.validityChanged();
    });
  }

  #fetchSpare(above: bigint): void {
    if (this.#fetchingSpare || this.#lease === undefined) return;
    const generation = this.#generation;
    this.#fetchingSpare = true;
    this.storeCalls += 1;
    this.#options.store.takeEpoch(above).then(
      (spare) => {
        this.#fetchingSpare = false;
        this.#noteEpoch(spare);
        if (generation !== this.#generation) return;
        this.#keepSpare(spare);
        this.#options.events.validityChanged();
      },
      (error: unknown) => {
        this.#fetchingSpare = false;
        if (generation !== this.#generation) return;
        this.#options.events.unavailable("take a spare epoch", error);
        this.#options.timers.after(this.#options.leaseMs / 10, () => {
          if (generation === this.#generation) this.#fetchSpare(above);
        });
      },
    );
  }
}
