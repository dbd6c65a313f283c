/**
 * Kleppmann's fencing scenario ("How to do distributed locking", 2016) as one reusable function:
 * client 1 gets the lock, pauses (GC, VM migration) past its lease, the lock server grants client 2 a
 * newer token, client 2 writes, client 1 wakes and writes with its old token and must be refused.
 *
 * The grants come from `getToken`: a simulated lock server here, a real lockd in an end-to-end test.
 */
import { expect } from "vitest";
import { StaleTokenError } from "../errors.js";

export type WriteOutcome = "accepted" | "refused";

export interface KleppmannParticipants {
  /** Grants the lock to the next holder; each call returns a strictly higher token. */
  getToken(): Promise<bigint>;
  /** A holder's protected write; "refused" when the resource rejects the token as stale. */
  write(token: bigint): Promise<WriteOutcome>;
  /** The tokens of the writes the resource applied, in order. */
  applied(): Promise<bigint[]>;
}

export async function runKleppmannScenario(participants: KleppmannParticipants): Promise<void> {
  const client1Token = await participants.getToken();
  // Client 1 is paused here; its lease runs out and the lock server moves on to client 2.
  const client2Token = await participants.getToken();
  expect(client2Token).toBeGreaterThan(client1Token);

  expect(await participants.write(client2Token)).toBe("accepted");
  // Client 1 wakes up, still believing it holds the lock.
  expect(await participants.write(client1Token)).toBe("refused");
  expect(await participants.applied()).toEqual([client2Token]);
}

/** "accepted" when the write succeeds, "refused" on StaleTokenError; any other failure propagates. */
export async function outcomeOf(write: Promise<unknown>): Promise<WriteOutcome> {
  try {
    await write;
    return "accepted";
  } catch (error) {
    if (error instanceof StaleTokenError) return "refused";
    throw error;
  }
}

/** Stands in for a lock server: each call grants the next token, starting at `first`. */
export function simulatedGrants(first: bigint): () => Promise<bigint> {
  let next = first;
  return async () => next++;
}
