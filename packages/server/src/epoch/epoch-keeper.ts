import { epochRound } from "@lock/protocol";
import {
  clockRound,
  type EpochPlan,
  isImplausibleEpoch,
  MAX_LEAD_ROUNDS,
  planEpoch,
  ROUND_MS,
} from "./epoch-plan.js";
import { type EpochStore, EpochStoreError } from "./epoch-store.js";

export interface EpochKeeperOptions {
  readonly store: EpochStore;
  /** This node's id: the epoch's low bits (docs/protocol.md, "Fencing tokens"). */
  readonly nodeId: number;
  /** Wall-clock milliseconds since 1970 (`Date.now`); the round's time component. */
  readonly wallNow: () => number;
  readonly maxClockSkewMs: number;
}

/** What `learn` did with an epoch it was told about. */
export type LearnOutcome = "known" | "raised" | "implausible";

/**
 * The last epoch taken and when it may grant. An epoch whose round runs further ahead of the clock
 * than the lead invariant allows (an epoch file or a peer's epoch ahead of this machine's clock)
 * does not hold the node until the clock catches up: it serves from `servesFromMs`, at most one
 * lone-start wait after it was taken, and its tokens run ahead of the clock until
 * `clockCatchesUpMs` (wall times, ms since 1970).
 */
export interface TakenEpoch {
  readonly epoch: bigint;
  readonly takenAtMs: number;
  readonly servesFromMs: number;
  readonly clockCatchesUpMs: number;
}

/**
 * The highest epoch this node has taken or heard of, kept durably: a node that restarts starts
 * above everything it ever heard, not just above what it took itself. Every epoch a node learns
 * (heartbeats, snapshots, the replication stream) goes through `learn`, which stores it before the
 * caller can act on it. `take` picks and stores this node's next epoch (epoch-plan.ts).
 *
 * Not thread-safe and synchronous: a durable write blocks the event loop for one fsync, which is
 * what makes "stored before acted on" hold; it happens only when the highest epoch rises.
 */
export class EpochKeeper {
  readonly nodeId: number;
  readonly #store: EpochStore;
  readonly #wallNow: () => number;
  readonly #maxClockSkewMs: number;
  #highest: bigint;
  #taken: TakenEpoch | undefined;

  constructor(options: EpochKeeperOptions) {
    this.nodeId = options.nodeId;
    this.#store = options.store;
    this.#wallNow = options.wallNow;
    this.#maxClockSkewMs = options.maxClockSkewMs;
    const stored = options.store.read();
    if (isImplausibleEpoch(stored, this.#wallNow())) {
      const days = Number(epochRound(stored) - clockRound(this.#wallNow())) / 86_400;
      throw new EpochStoreError(
        `${options.store.name} holds epoch ${stored}, ${days.toFixed(1)} days ahead of this machine's clock: ` +
          "fix the clock (tokens carry the time), or if the file is wrong see docs/operations.md",
      );
    }
    this.#highest = stored;
  }

  /** The last epoch this node took, and when it may grant from it. */
  get taken(): TakenEpoch | undefined {
    return this.#taken;
  }

  /**
   * The last epoch taken when its round is ahead of the clock by more than the lead invariant
   * allows, until the clock catches up: operators see it (lockd logs it, /status shows it).
   */
  aheadOfClock(): TakenEpoch | undefined {
    const taken = this.#taken;
    if (taken === undefined || taken.clockCatchesUpMs <= taken.servesFromMs) return undefined;
    return this.#wallNow() < taken.clockCatchesUpMs ? taken : undefined;
  }

  /** The highest epoch taken or heard of; heartbeats carry it. */
  get highest(): bigint {
    return this.#highest;
  }

  /**
   * Records an epoch heard from a peer. An epoch beyond what any clock allows is not believed (it
   * would push every later round out of reach) and is reported as "implausible"; nothing is stored.
   */
  learn(epoch: bigint): LearnOutcome {
    if (epoch <= this.#highest) return "known";
    if (isImplausibleEpoch(epoch, this.#wallNow())) return "implausible";
    this.#store.write(epoch);
    this.#highest = epoch;
    return "raised";
  }

  /**
   * Takes and stores this node's next epoch. `serveFromMs` says from when it may grant (the lead
   * invariant); it is never more than one lone-start wait away, so a clock set back by the
   * operator cannot hold a node for long (the time guarantee then holds once the clock catches up).
   */
  take(informed: boolean): EpochPlan {
    const now = this.#wallNow();
    const plan = planEpoch({
      highestKnown: this.#highest,
      nodeId: this.nodeId,
      wallMs: now,
      informed,
      maxClockSkewMs: this.#maxClockSkewMs,
    });
    this.#store.write(plan.epoch);
    this.#highest = plan.epoch;
    const servesFromMs = Math.min(plan.serveFromMs, now + longestHoldMs(this.#maxClockSkewMs));
    this.#taken = { epoch: plan.epoch, takenAtMs: now, servesFromMs, clockCatchesUpMs: plan.serveFromMs };
    return { epoch: plan.epoch, serveFromMs: servesFromMs };
  }
}

/**
 * The longest a node holds grants after taking an epoch (`NO_ACTIVE` to clients): a lone restart
 * waits about 2 × skew + 1 s, an epoch a few rounds ahead after promotions in quick succession a
 * little longer; never more than this, however far ahead the round (docs/protocol.md).
 */
export function longestHoldMs(maxClockSkewMs: number): number {
  return 2 * maxClockSkewMs + Number(MAX_LEAD_ROUNDS + 2n) * ROUND_MS;
}
