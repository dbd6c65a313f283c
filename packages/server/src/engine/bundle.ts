import type { KeyState } from "./records.js";
import { compareKeys } from "./sorted-keys.js";

/**
 * Bundles: one acquire of several keys at once (`B` on the wire), granted all together under one
 * token and one lease, or not at all.
 *
 * Why no two bundles can deadlock each other: a bundle is enqueued into every one of its keys'
 * FIFO queues in one engine step, so all queues are ordered by one arrival order. The oldest
 * waiting request is therefore at the head of every queue it is in, and waits only for holders,
 * whose leases end. A key whose queue head is a bundle that cannot be granted yet is not granted to
 * the requests behind it (FIFO), so a bundle is never starved by single-key acquires either.
 *
 * While queued, a bundle is one `Waiter` per key, each pointing at the `QueuedBundle`; only the first
 * key's waiter carries the wait deadline (`QueuedBundle`, records.ts). Once granted, each key is held exclusively by the key's
 * own record with the bundle's token, and the `HeldBundle` (found by that token) ties them together
 * for release, extension and expiry.
 */

/** A granted bundle: the keys its token holds (each key's own record has the token, id and lease). */
export class HeldBundle {
  constructor(
    /** Grows only while a standby installs a replicated bundle key by key (`installHolder`). */
    readonly keys: string[],
    readonly token: bigint,
  ) {}
}

/** The keys of a bundle request, de-duplicated, in code-point order (the order queues are joined in). */
export function bundleKeys(keys: readonly string[]): string[] {
  const sorted = [...new Set(keys)].sort(compareKeys);
  return sorted;
}

/**
 * Whether a key refuses a bundle: bundles are exclusive locks, so a key held by shared holders or
 * permits, or with a shared or permit acquire in its queue, answers KIND_MISMATCH (as an acquire of
 * the wrong kind does).
 */
export function refusesBundle<P>(state: KeyState<P>): "lock" | "semaphore" | undefined {
  if (state.semaphoreLimit !== undefined) return "semaphore";
  if (state.holders !== undefined) return "lock";
  for (let waiter = state.head; waiter; waiter = waiter.next) {
    if (waiter.mode.kind === "permit") return "semaphore";
    if (waiter.mode.kind !== "exclusive") return "lock";
  }
  return undefined;
}
