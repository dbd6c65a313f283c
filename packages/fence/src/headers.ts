/**
 * The HTTP half shared by clients and servers: the header name, a helper that sets it from a held lock,
 * and the parser the Fastify plugin uses. No Fastify import, so HTTP clients can use it alone.
 */
import { kindOf } from "./arguments.js";
import { FenceError } from "./errors.js";
import { parseToken } from "./token.js";

/** Lower-case, as Node presents incoming header names. */
export const FENCING_TOKEN_HEADER = "fencing-token";

/** Request headers carrying the lock's token, e.g. `fetch(url, { headers: fencingHeaders(lock) })`. */
export function fencingHeaders(lock: { readonly token: bigint }): { "fencing-token": string } {
  if (typeof lock !== "object" || lock === null) {
    throw new FenceError(
      "FENCE_BAD_ARGUMENT",
      `fencingHeaders() needs a lock (with a token), got ${kindOf(lock)}`,
    );
  }
  return { [FENCING_TOKEN_HEADER]: parseToken(lock.token).toString() };
}

/**
 * Parses a header value as Node delivers it. Throws FENCE_MISSING_TOKEN when absent or empty, and
 * FENCE_BAD_TOKEN when malformed or repeated (two tokens on one request are ambiguous).
 */
export function parseFencingHeader(
  value: string | readonly string[] | undefined,
  /** The header's name, for the error messages. */
  name: string = FENCING_TOKEN_HEADER,
): bigint {
  if (value === undefined || value === "") {
    throw new FenceError("FENCE_MISSING_TOKEN", `the ${name} header is required`);
  }
  if (typeof value !== "string") {
    throw new FenceError("FENCE_BAD_TOKEN", `the ${name} header must appear once`);
  }
  return parseToken(value);
}
