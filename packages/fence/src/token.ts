/**
 * Token input validation. A fencing token is a u64; JavaScript numbers lose integers above 2^53, so only
 * a bigint or the canonical decimal string of one is accepted. No coercion: "007", "1e3", " 5" and 5 are
 * all refused, because a silently different token is exactly the bug fencing exists to prevent.
 */
import { FenceError } from "./errors.js";

export const MAX_TOKEN = 0xffff_ffff_ffff_ffffn;

/** What fence() and the adapters accept as a token. */
export type FencingTokenInput = bigint | string;

// No sign, no leading zeros, at most 20 digits (2^64-1 has 20); the range check follows.
const CANONICAL_DECIMAL = /^(?:0|[1-9][0-9]{0,19})$/;

/** Returns the token as a bigint in [0, 2^64-1] or throws FenceError FENCE_BAD_TOKEN. */
export function parseToken(input: unknown): bigint {
  if (typeof input === "bigint") {
    if (input >= 0n && input <= MAX_TOKEN) return input;
    throw badToken(input, "it is outside the u64 range [0, 2^64-1]");
  }
  if (typeof input === "string") {
    if (!CANONICAL_DECIMAL.test(input)) {
      throw badToken(input, "a string token must be a plain decimal u64: digits only, no leading zeros");
    }
    const value = BigInt(input);
    if (value <= MAX_TOKEN) return value;
    throw badToken(input, "it is above 2^64-1");
  }
  if (typeof input === "number") {
    throw badToken(input, "numbers lose precision above 2^53; pass a bigint or a decimal string");
  }
  throw badToken(
    input,
    `expected a bigint or a decimal string, got ${input === null ? "null" : typeof input}`,
  );
}

function badToken(input: unknown, why: string): FenceError {
  return new FenceError("FENCE_BAD_TOKEN", `invalid fencing token ${describe(input)}: ${why}`);
}

/** A short, printable rendering of untrusted input for error messages. */
function describe(input: unknown): string {
  let text: string;
  if (typeof input === "string") text = JSON.stringify(input);
  else if (typeof input === "bigint") text = `${input}n`;
  else text = String(input);
  return text.length > 48 ? `${text.slice(0, 45)}...` : text;
}
