import { composeEpoch, epochNodeId, epochRound, MAX_ROUND } from "@lock/protocol";

/**
 * How a node picks its next epoch: a pure function of what it knows, its node id and its wall clock.
 * docs/consistency.md ("Epochs") has the argument; in short:
 *
 * - The epoch's low bits are the node id, so two nodes never take the same epoch.
 * - The round (high bits) is above the highest round the node knows of, and at least the clock's
 *   round (seconds since ROUND_ORIGIN_MS), so a later epoch tends to be a larger one even between
 *   nodes that never heard of each other.
 * - **Lead invariant**: no node grants from round r before its clock reads round r − MAX_LEAD_ROUNDS.
 *   An epoch taken ahead of the clock (promotions in quick succession) waits until then.
 * - A node that has not heard from the whole cluster since it started ("uninformed": a lone
 *   restart) cannot know the rounds taken while it was down. With clocks within `maxClockSkewMs` of
 *   true time, every round anyone granted from is at most clock round(now + skew) + lead, so it takes
 *   round(now + 2·skew) + lead + 1 and waits (about 2·skew + 1 s) until the invariant holds again.
 */

/** Rounds are whole seconds. */
export const ROUND_MS = 1000;
/** Round 0 began at 2026-01-01T00:00:00Z. */
export const ROUND_ORIGIN_MS = Date.UTC(2026, 0, 1);
/** How far a round may run ahead of the taker's clock when it first grants. */
export const MAX_LEAD_ROUNDS = 2n;
/** The default bound on how far a node's wall clock is from true time. */
export const DEFAULT_MAX_CLOCK_SKEW_MS = 500;
/**
 * Epochs whose round is further ahead of this node's clock than this are not believed (a corrupt
 * file or frame, or a clock a day off): taking them would move every later round out of reach.
 */
export const MAX_PLAUSIBLE_LEAD_ROUNDS = 86_400n;

/** The clock's round at wall time `wallMs`, clamped to the layout's range. */
export function clockRound(wallMs: number): bigint {
  if (!Number.isFinite(wallMs)) return 0n;
  const round = BigInt(Math.floor((wallMs - ROUND_ORIGIN_MS) / ROUND_MS));
  if (round < 0n) return 0n;
  return round > MAX_ROUND ? MAX_ROUND : round;
}

/** The wall time at which the clock reaches `round`. */
export function roundStartMs(round: bigint): number {
  return ROUND_ORIGIN_MS + Number(round) * ROUND_MS;
}

export interface EpochPlanInput {
  /** The highest epoch this node has taken or heard of (0 if none). */
  readonly highestKnown: bigint;
  readonly nodeId: number;
  readonly wallMs: number;
  /** Heard the whole cluster since start (or single node): knows every round taken before. */
  readonly informed: boolean;
  readonly maxClockSkewMs: number;
}

export interface EpochPlan {
  readonly epoch: bigint;
  /** Wall time from which the node may grant from `epoch` (the lead invariant); may be in the past. */
  readonly serveFromMs: number;
}

/** Thrown when no epoch above `highestKnown` fits the layout (only a corrupt input can cause it). */
export class EpochExhaustedError extends Error {
  readonly code = "EPOCH_EXHAUSTED";
  override readonly name = "EpochExhaustedError";
}

export function planEpoch(input: EpochPlanInput): EpochPlan {
  const { highestKnown, nodeId, wallMs, informed, maxClockSkewMs } = input;
  // The smallest round whose epoch with this node id is above the highest known one.
  const knownRound = epochRound(highestKnown);
  const aboveKnown = nodeId > epochNodeId(highestKnown) ? knownRound : knownRound + 1n;
  const fromClock = informed
    ? clockRound(wallMs)
    : clockRound(wallMs + 2 * maxClockSkewMs) + MAX_LEAD_ROUNDS + 1n;
  const round = aboveKnown > fromClock ? aboveKnown : fromClock;
  if (round > MAX_ROUND) {
    throw new EpochExhaustedError(`no epoch above ${highestKnown} fits the token layout`);
  }
  return { epoch: composeEpoch(round, nodeId), serveFromMs: roundStartMs(round - MAX_LEAD_ROUNDS) };
}

/** True when `epoch`'s round is beyond what any correct node could have taken by `wallMs`. */
export function isImplausibleEpoch(epoch: bigint, wallMs: number): boolean {
  return epochRound(epoch) > clockRound(wallMs) + MAX_PLAUSIBLE_LEAD_ROUNDS;
}
