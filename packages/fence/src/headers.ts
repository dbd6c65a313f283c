/**
 * The HTTP half shared by clients and servers: the header names, a helper that sets them from a held
 * lock, and the parsers the Fastify plugin uses. No Fastify import, so HTTP clients can use it alone.
 */
import { kindOf } from "./arguments.js";
import { FenceError } from "./errors.js";
import type { FencingLock, LockModeName } from "./grant.js";
import { assertSlot } from "./slot.js";
import { parseToken } from "./token.js";

/** Lower-case, as Node presents incoming header names. */
export const FENCING_TOKEN_HEADER = "fencing-token";
/** A semaphore permit's slot: a fenced route then refuses the request unless it fences that slot. */
export const FENCING_SLOT_HEADER = "fencing-slot";
/** The lock's mode: with "shared", a route that writes refuses the request. */
export const FENCING_MODE_HEADER = "fencing-mode";

/**
 * What fencingHeaders() returns: the token, and the slot and mode when the lock has them. A type, not
 * an interface, so that it passes as fetch()'s and inject()'s header records.
 */
export type FencingHeaders = {
  "fencing-token": string;
  "fencing-slot"?: string;
  "fencing-mode"?: LockModeName;
};

/**
 * Request headers carrying the lock's token, e.g. `fetch(url, { headers: fencingHeaders(lock) })`,
 * with its slot (a semaphore permit) and mode when it has them, so that the route can refuse a
 * permit's token on a resource that is not its slot's, or a reader's on a route that writes.
 */
export function fencingHeaders(lock: FencingLock): FencingHeaders {
  if (typeof lock !== "object" || lock === null) {
    throw new FenceError(
      "FENCE_BAD_ARGUMENT",
      `fencingHeaders() needs a lock (with a token), got ${kindOf(lock)}`,
    );
  }
  const headers: FencingHeaders = { [FENCING_TOKEN_HEADER]: parseToken(lock.token).toString() };
  if (lock.slot !== undefined) {
    assertSlot(lock.slot, "fencingHeaders()");
    headers[FENCING_SLOT_HEADER] = String(lock.slot);
  }
  if (lock.mode !== undefined) headers[FENCING_MODE_HEADER] = parseMode(lock.mode, "fencingHeaders()");
  return headers;
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
  return parseToken(single(value, name));
}

/**
 * The lock a request presents: its token (parseFencingHeader()) and, when the Fencing-Slot or
 * Fencing-Mode header is present, its slot or mode. A malformed or repeated one is FENCE_BAD_TOKEN.
 */
export function parseFencingRequest(
  headers: Readonly<Record<string, string | readonly string[] | undefined>>,
  tokenHeader: string = FENCING_TOKEN_HEADER,
): { token: bigint; slot?: number; mode?: LockModeName } {
  const token = parseFencingHeader(headers[tokenHeader], tokenHeader);
  const slot = headers[FENCING_SLOT_HEADER];
  const mode = headers[FENCING_MODE_HEADER];
  return {
    token,
    ...(slot === undefined ? {} : { slot: parseSlotHeader(single(slot, FENCING_SLOT_HEADER)) }),
    ...(mode === undefined
      ? {}
      : { mode: parseMode(single(mode, FENCING_MODE_HEADER), FENCING_MODE_HEADER) }),
  };
}

function single(value: string | readonly string[], name: string): string {
  if (typeof value !== "string") {
    throw new FenceError("FENCE_BAD_TOKEN", `the ${name} header must appear once`);
  }
  return value;
}

function parseSlotHeader(value: string): number {
  const slot = /^(0|[1-9][0-9]{0,15})$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(slot)) {
    throw new FenceError("FENCE_BAD_TOKEN", `the ${FENCING_SLOT_HEADER} header must be an integer >= 0`);
  }
  return slot;
}

function parseMode(value: unknown, where: string): LockModeName {
  if (value === "exclusive" || value === "shared" || value === "permit") return value;
  const code = where === FENCING_MODE_HEADER ? "FENCE_BAD_TOKEN" : "FENCE_BAD_ARGUMENT";
  throw new FenceError(
    code,
    `${where}: a lock's mode is "exclusive", "shared" or "permit", got ${kindOf(value)}`,
  );
}
