import { EXCLUSIVE, type LockMode, permits, SHARED } from "./lock-mode.js";
import { type KeyState, NO_TOKEN } from "./records.js";

/**
 * What a watcher is told of a key (docs/protocol.md, "Watching a key"): the newest grant's token among
 * its holders (0 when free), its mode (undefined when free) and how many hold it. Never a request id.
 */
export interface HolderSummary {
  readonly token: bigint;
  readonly mode: LockMode | undefined;
  readonly holders: number;
}

export const FREE: HolderSummary = Object.freeze({ token: 0n, mode: undefined, holders: 0 });

/** The summary of a key's record (undefined: the key is not held). */
export function summarize<P>(state: KeyState<P> | undefined): HolderSummary {
  if (state === undefined) return FREE;
  if (state.token !== NO_TOKEN) return { token: state.token, mode: EXCLUSIVE, holders: 1 };
  const set = state.holders;
  if (set === undefined || set.count === 0) return FREE;
  // Holders are few on a watched key in practice; a scan per change keeps the records lean.
  let newest = 0n;
  for (const holder of set.values()) if (holder.token > newest) newest = holder.token;
  return { token: newest, mode: set.kind === "shared" ? SHARED : permits(set.limit), holders: set.count };
}

/** Two summaries say the same (pushes are only sent for a change). */
export function sameSummary(a: HolderSummary, b: HolderSummary): boolean {
  if (a.token !== b.token || a.holders !== b.holders) return false;
  if (a.mode === undefined || b.mode === undefined) return a.mode === b.mode;
  return (
    a.mode.kind === b.mode.kind &&
    (a.mode.kind !== "permit" || a.mode.limit === (b.mode as { limit: number }).limit)
  );
}
