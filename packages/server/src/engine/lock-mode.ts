import type { LockMode } from "@lock/protocol";

export type { LockMode } from "@lock/protocol";
export { EXCLUSIVE, MAX_PERMITS, permits, SHARED } from "@lock/protocol";

/**
 * How an acquire wants to hold its key, and the rules for which holds may share a key. Pure: the
 * engine asks these questions, they own no state.
 *
 * A key is one of two kinds while it has holders or waiters, fixed until it is idle again:
 * - a **lock**: one `exclusive` holder, or any number of `shared` holders (a read/write lock);
 * - a **semaphore** of `limit` permits: up to `limit` holders, each on its own slot 0..limit−1.
 * An idle key is forgotten, kind and limit with it: the next acquire decides them afresh.
 */

/** What a key is held as right now. */
export type HoldingKind = "none" | "exclusive" | "shared" | "permit";

/** Why a request cannot join a key at all (it is never queued): a kind or limit that disagrees. */
export type ModeConflict =
  | { readonly code: "KIND_MISMATCH"; readonly current: "lock" | "semaphore" }
  | { readonly code: "LIMIT_MISMATCH"; readonly limit: number };

/**
 * Whether `mode` disagrees with the kind a busy key already has. `semaphoreLimit` is the key's
 * limit if it is a semaphore (held or queued for), undefined if it is a lock.
 */
export function modeConflict(mode: LockMode, semaphoreLimit: number | undefined): ModeConflict | undefined {
  if (semaphoreLimit === undefined)
    return mode.kind === "permit" ? { code: "KIND_MISMATCH", current: "lock" } : undefined;
  if (mode.kind !== "permit") return { code: "KIND_MISMATCH", current: "semaphore" };
  return mode.limit === semaphoreLimit ? undefined : { code: "LIMIT_MISMATCH", limit: semaphoreLimit };
}

/**
 * Whether a request in `mode` may be granted beside the key's current holders: `holding` is how
 * the key is held, by `holders` holders (a semaphore's limit is the request's own, checked equal by
 * `modeConflict`). The queue aside: the engine grants only the queue's head, or an arrival when
 * nobody waits, so the order is phase-fair by construction (a shared request behind a waiting
 * exclusive one is not at the head, so it waits). `maxShared` caps one key's shared holders (more
 * wait their turn). Plain arguments, no object: it runs on every contended acquire.
 */
/** The shape of `canHoldBeside`: the engine takes another only for a negative control. */
export type HoldRule = (mode: LockMode, holding: HoldingKind, holders: number, maxShared: number) => boolean;

export function canHoldBeside(
  mode: LockMode,
  holding: HoldingKind,
  holders: number,
  maxShared: number,
): boolean {
  switch (mode.kind) {
    case "exclusive":
      return holding === "none";
    case "shared":
      return holding === "none" || (holding === "shared" && holders < maxShared);
    default:
      return holding === "none" || (holding === "permit" && holders < mode.limit);
  }
}
