import { isCanonicalDecimal } from "./decimal.js";

/**
 * Fencing tokens are u64 values carried as canonical decimals and held as `bigint`, because most
 * of them (any epoch above 8191) are beyond 2^53 and would be rounded as a `number`.
 */
export const MAX_TOKEN: bigint = 2n ** 64n - 1n;
const MAX_TOKEN_TEXT = MAX_TOKEN.toString();
const MAX_TOKEN_DIGITS = MAX_TOKEN_TEXT.length;

/**
 * Token layout: `epoch × 2^40 + sequence`. A node takes a new persisted epoch at every start and
 * promotion, so tokens from a newer epoch sort above every token of an older one.
 */
export const EPOCH_BITS = 24;
export const SEQUENCE_BITS = 40;
export const MAX_EPOCH: bigint = (1n << BigInt(EPOCH_BITS)) - 1n;
export const MAX_SEQUENCE: bigint = (1n << BigInt(SEQUENCE_BITS)) - 1n;
const SEQUENCE_SHIFT = BigInt(SEQUENCE_BITS);

/** Parses a canonical decimal u64 (`0` or `[1-9][0-9]*`, at most 2^64-1); undefined otherwise. */
export function parseToken(text: string): bigint | undefined {
  if (!isCanonicalDecimal(text, MAX_TOKEN_DIGITS)) return undefined;
  // Equal-length digit strings compare like the numbers they spell.
  if (text.length === MAX_TOKEN_DIGITS && text > MAX_TOKEN_TEXT) return undefined;
  return BigInt(text);
}

/** Formats a u64; anything else is a programming error and throws. */
export function formatToken(token: bigint): string {
  return formatU64(token, "token");
}

/** Like formatToken, with the field's name in the error (epochs and sequence numbers are u64 too). */
export function formatU64(value: bigint, what: string): string {
  if (typeof value !== "bigint") throw new TypeError(`${what} must be a bigint, got ${typeof value}`);
  if (value < 0n || value > MAX_TOKEN) throw new RangeError(`${what} ${value} is outside the u64 range`);
  return value.toString();
}

export function composeToken(epoch: bigint, sequence: bigint): bigint {
  if (epoch < 0n || epoch > MAX_EPOCH) throw new RangeError(`epoch ${epoch} is outside 0..${MAX_EPOCH}`);
  if (sequence < 0n || sequence > MAX_SEQUENCE) {
    throw new RangeError(`sequence ${sequence} is outside 0..${MAX_SEQUENCE}`);
  }
  return (epoch << SEQUENCE_SHIFT) | sequence;
}

export function tokenEpoch(token: bigint): bigint {
  checkToken(token);
  return token >> SEQUENCE_SHIFT;
}

export function tokenSequence(token: bigint): bigint {
  checkToken(token);
  return token & MAX_SEQUENCE;
}

function checkToken(token: bigint): void {
  if (token < 0n || token > MAX_TOKEN) throw new RangeError(`token ${token} is outside the u64 range`);
}
