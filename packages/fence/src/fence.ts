import { assertReadStore, assertStore } from "./arguments.js";
import { FenceError } from "./errors.js";
import { checkFenceInput } from "./fence-input.js";
import { type FencingGrant, grantToken } from "./grant.js";
import type { FenceReadOptions, FenceStore, FenceWrite, ReadFenceStore } from "./store.js";

/**
 * Runs `write` only if `token` is not lower than the highest token `resource` has accepted (equal is
 * allowed: one holder may write many times), nor than a read recorded there since (fenceRead()), and
 * records `token`. The check, the advance and the write are atomic in the store. Returns what `write`
 * returns.
 *
 * `token` is a bigint, its decimal string, or the lock itself: given the lock, a permit's token is
 * refused anywhere but on its slot's resource (FENCE_SLOT_MISMATCH) and a shared lock's is refused
 * (FENCE_SHARED_WRITE), as the token alone cannot show either.
 *
 * Throws FenceError FENCE_BAD_ARGUMENT (a store that is not one, a write that is not a function),
 * FENCE_BAD_TOKEN, FENCE_BAD_RESOURCE, FENCE_SLOT_MISMATCH or FENCE_SHARED_WRITE before touching the
 * store, StaleTokenError when the token is stale (FENCE_STALE_TOKEN, or FENCE_NEWER_READ; nothing
 * written), or whatever `write` threw (nothing written, token not advanced; see each adapter for what
 * "nothing written" can promise).
 */
export async function fence<Tx, T>(
  store: FenceStore<Tx>,
  resource: string,
  token: FencingGrant,
  write: FenceWrite<Tx, T>,
): Promise<Awaited<T>> {
  assertStore(store);
  // The built-in stores check again (they can be called without fence()); a custom store may not.
  const checked = checkFenceInput(resource, grantToken(resource, token, "write"), write);
  return store.fence(resource, checked, write);
}

/**
 * The read rule, for resources guarded by shared/exclusive locks: runs `read` only if `token` is not
 * lower than the highest write `resource` has accepted, with no write able to take effect while it
 * runs. With `{ record: true }` it also records `token` as a read, so that from then on a write with
 * a lower token (a writer whose grant ended before this reader's began) is refused with
 * FENCE_NEWER_READ. Returns what `read` returns.
 *
 * `token` is a bigint, its decimal string, or the lock (see fence()). Throws as fence() does, and
 * StaleTokenError FENCE_STALE_READ when a newer write was accepted (`read` is not called), or
 * FENCE_BAD_ARGUMENT when the store has no fenceRead().
 */
export async function fenceRead<Tx, ReadTx, T>(
  store: ReadFenceStore<Tx, ReadTx>,
  resource: string,
  token: FencingGrant,
  read: FenceWrite<ReadTx, T>,
  options: FenceReadOptions = {},
): Promise<Awaited<T>> {
  assertReadStore(store);
  const checked = checkFenceInput(resource, grantToken(resource, token, "read"), read);
  return store.fenceRead(resource, checked, read, { record: readOptions(options).record === true });
}

/** FENCE_BAD_OPTIONS unless `options` is undefined or an object whose `record` is a boolean if set. */
function readOptions(options: unknown): FenceReadOptions {
  if (options === undefined) return {};
  const record = (options as FenceReadOptions | null)?.record;
  if (
    typeof options !== "object" ||
    options === null ||
    (record !== undefined && typeof record !== "boolean")
  ) {
    throw new FenceError("FENCE_BAD_OPTIONS", "fenceRead() options are { record?: boolean }");
  }
  return options as FenceReadOptions;
}
