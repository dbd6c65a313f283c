/**
 * The property both fast paths are held to, beside their stores' general path: writers racing with
 * interleaved tokens, each refused or accepted, and exactly the accepted ones applied, in an order
 * that never goes down.
 */
import { expect } from "vitest";
import { compareBigints } from "../contract/contract.js";
import { StaleTokenError } from "../errors.js";

export interface RaceOutcome {
  token: bigint;
  accepted: boolean;
}

/** Starts every write at once; a StaleTokenError is a refusal (below the mark it names), any other error fails. */
export function race<W extends { token: bigint }>(
  planned: readonly W[],
  attempt: (write: W) => Promise<unknown>,
): Promise<RaceOutcome[]> {
  return Promise.all(
    planned.map(async (write) => {
      try {
        await attempt(write);
        return { token: write.token, accepted: true };
      } catch (error) {
        if (!(error instanceof StaleTokenError)) throw error;
        expect(error.currentToken).toBeGreaterThan(write.token);
        return { token: write.token, accepted: false };
      }
    }),
  );
}

/** Checks `applied` (the log, in the order writes took effect) against the outcomes; returns the highest token. */
export function expectOnlyAcceptedApplied(
  applied: readonly bigint[],
  outcomes: readonly RaceOutcome[],
): bigint {
  const accepted = outcomes.filter((outcome) => outcome.accepted).map((outcome) => outcome.token);
  expect(applied).toEqual([...applied].sort(compareBigints));
  expect([...applied].sort(compareBigints)).toEqual(accepted.sort(compareBigints));
  const highest = outcomes
    .map((outcome) => outcome.token)
    .sort(compareBigints)
    .at(-1)!;
  // The highest token is never refused: nothing is above it.
  expect(applied.at(-1)).toBe(highest);
  return highest;
}
