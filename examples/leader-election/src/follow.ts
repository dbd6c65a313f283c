/**
 * Who leads, for a dashboard or a health check: follows the election's key without campaigning and
 * yields each change of leadership, the new leader's term or `undefined` while nobody leads. lockd
 * pushes every change (`client.observe`), so nothing polls, and the term is the one the leader
 * fences its writes with.
 */
import type { LockClient } from "@lock/client";

/** The current leadership first, then each change, until `signal` aborts or the client closes. */
export async function* leadershipChanges(
  client: LockClient,
  key: string,
  signal: AbortSignal,
): AsyncGenerator<bigint | undefined> {
  let last: bigint | undefined | null = null; // null: nothing yielded yet
  for await (const state of client.observe(key, { signal })) {
    const term = state.held ? state.token : undefined;
    // A state can change without the leadership changing (after a reconnect, the same holder again).
    if (term === last) continue;
    last = term;
    yield term;
  }
}

/** One line for a dashboard. */
export function describeLeadership(key: string, term: bigint | undefined): string {
  return term === undefined ? `${key}: no leader` : `${key}: led in term ${term}`;
}
