import { assertResource } from "./resource.js";
import { parseToken } from "./token.js";

/**
 * The one input check of this package: fence() runs it, and so does every store's own fence(), because
 * a store can be called directly, from plain JavaScript, with anything. A store that trusted its caller
 * once wrote a string token inline into SQL (a DROP TABLE ran) and stored a non-numeric token in Redis.
 * Custom stores should call it first too.
 *
 * Returns the token as a bigint in [0, 2^64-1]. Throws FenceError FENCE_BAD_TOKEN (see parseToken) or
 * FENCE_BAD_RESOURCE (see assertResource) before anything else happens.
 */
export function checkFenceInput(resource: unknown, token: unknown): bigint {
  const checkedToken = parseToken(token);
  assertResource(resource);
  return checkedToken;
}
