import { assertStore } from "./arguments.js";
import { checkFenceInput } from "./fence-input.js";
import type { FenceStore, FenceWrite } from "./store.js";
import type { FencingTokenInput } from "./token.js";

/**
 * Runs `write` only if `token` is not lower than the highest token `resource` has accepted (equal is
 * allowed: one holder may write many times), and records `token`. The check, the advance and the write
 * are atomic in the store. Returns what `write` returns.
 *
 * Throws FenceError FENCE_BAD_ARGUMENT (a store that is not one, a write that is not a function),
 * FENCE_BAD_TOKEN or FENCE_BAD_RESOURCE before touching the store, StaleTokenError
 * when the token is stale (nothing written), or whatever `write` threw (nothing written, token not
 * advanced; see each adapter for what "nothing written" can promise).
 */
export async function fence<Tx, T>(
  store: FenceStore<Tx>,
  resource: string,
  token: FencingTokenInput,
  write: FenceWrite<Tx, T>,
): Promise<Awaited<T>> {
  assertStore(store);
  // The built-in stores check again (they can be called without fence()); a custom store may not.
  return store.fence(resource, checkFenceInput(resource, token, write), write);
}
