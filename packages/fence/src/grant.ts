/**
 * A token handed to fence() or fenceRead() together with what it was granted for. With a bare token
 * the fence cannot tell a reader's or a permit's token from an exclusive holder's; with the lock it
 * came from it refuses the two uses that look fine token by token and are not (see FENCE_SLOT_MISMATCH
 * and FENCE_SHARED_WRITE in errors.ts).
 */
import { kindOf } from "./arguments.js";
import { FenceError } from "./errors.js";
import { assertResource } from "./resource.js";
import { assertSlot, parseSlotResource, slotResource } from "./slot.js";
import { type FencingTokenInput, parseToken } from "./token.js";

/**
 * A lock as @lock/client hands it out, or anything shaped like it: its token, and what the fence
 * checks when present: its key, its mode, and for a semaphore permit its slot.
 */
/** How a lock holds its key, as @lock/client's `Lock.mode` says. */
export type LockModeName = "exclusive" | "shared" | "permit";

export interface FencingLock {
  readonly token: FencingTokenInput;
  readonly key?: string;
  /** "shared" for a reader: such a token cannot fence a write. "permit" for a semaphore permit (with its slot). */
  readonly mode?: LockModeName;
  /** A semaphore permit's slot (0 to permits-1): its token fences only slotResource(key, slot). */
  readonly slot?: number;
}

/** What fence() and fenceRead() take as the token: a bigint, its decimal string, or the lock. */
export type FencingGrant = FencingTokenInput | FencingLock;

/** Whether a fenced call writes (fence()) or reads (fenceRead()). */
export type FenceUse = "write" | "read";

/**
 * The token of `grant` as a bigint, after checking that the grant may fence `resource` for `use`.
 * Throws FENCE_BAD_RESOURCE, FENCE_BAD_TOKEN, FENCE_BAD_ARGUMENT (a lock with a malformed mode or
 * slot, a slot without a key), FENCE_SLOT_MISMATCH or FENCE_SHARED_WRITE before anything is touched.
 */
export function grantToken(resource: unknown, grant: unknown, use: FenceUse): bigint {
  assertResource(resource);
  if (typeof grant !== "object" || grant === null) return parseToken(grant);
  const { token, key, mode, slot } = grant as Record<string, unknown>;
  const checked = parseToken(token);
  if (mode !== undefined && mode !== "exclusive" && mode !== "shared" && mode !== "permit") {
    throw new FenceError(
      "FENCE_BAD_ARGUMENT",
      `a lock's mode is "exclusive", "shared" or "permit", got ${kindOf(mode)}`,
    );
  }
  if (mode === "permit" && slot === undefined) {
    throw new FenceError("FENCE_BAD_ARGUMENT", 'a permit (mode "permit") must come with its slot');
  }
  if (slot !== undefined) {
    assertSlot(slot, "a permit");
    // slotResource() checks the key: a permit without one cannot be checked, so it is refused.
    const own = slotResource(key as string, slot);
    if (resource !== own) {
      throw new FenceError(
        "FENCE_SLOT_MISMATCH",
        `a permit of ${JSON.stringify(key)} (slot ${slot}) fences its slot's resource ${JSON.stringify(own)} ` +
          `only, not ${JSON.stringify(resource)}: permits are held together, so one token cannot order ` +
          "writes to a resource they share",
      );
    }
  } else if (parseSlotResource(resource) !== undefined) {
    throw new FenceError(
      "FENCE_SLOT_MISMATCH",
      `${JSON.stringify(resource)} is a semaphore slot's resource; only a permit of that slot (a lock with ` +
        "its key and slot) fences it",
    );
  }
  if (use === "write" && mode === "shared") {
    throw new FenceError(
      "FENCE_SHARED_WRITE",
      `a shared lock cannot fence a write to ${JSON.stringify(resource)}: readers hold the key together, so ` +
        "their tokens cannot order writes. Fence reads with fenceRead(); release, then acquire exclusively, to write",
    );
  }
  return checked;
}
