import { assertWrite } from "./arguments.js";
import { assertResource } from "./resource.js";
import { parseToken } from "./token.js";

/**
 * The one input check of this package: fence() runs it, and so does every store's own fence(), because
 * a store can be called directly, from plain JavaScript, with anything. A store that trusted its caller
 * once wrote a string token inline into SQL (a DROP TABLE ran) and stored a non-numeric token in Redis.
 * Custom stores should call it first too, with their write: `checkFenceInput(resource, token, write)`.
 *
 * Returns the token as a bigint in [0, 2^64-1]. Throws FenceError FENCE_BAD_TOKEN (see parseToken),
 * FENCE_BAD_RESOURCE (see assertResource) or, when a write is given, FENCE_BAD_ARGUMENT if it is not a
 * function, before anything else happens.
 */
export function checkFenceInput(resource: unknown, token: unknown): bigint;
export function checkFenceInput(resource: unknown, token: unknown, write: unknown): bigint;
export function checkFenceInput(resource: unknown, token: unknown, ...write: unknown[]): bigint {
  const checkedToken = parseToken(token);
  assertResource(resource);
  // Checked whenever passed, so that a store handing on its own undefined `write` is refused.
  if (write.length > 0) assertWrite(write[0]);
  return checkedToken;
}
