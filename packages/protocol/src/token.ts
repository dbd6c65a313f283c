import { isCanonicalDecimal } from "./decimal.js";

/**
 * Fencing tokens are u64 values carried as canonical decimals and held as `bigint`, because most
 * of them are beyond 2^53 and would be rounded as a `number`.
 */
export const MAX_TOKEN: bigint = 2n ** 64n - 1n;
const MAX_TOKEN_TEXT = MAX_TOKEN.toString();
const MAX_TOKEN_DIGITS = MAX_TOKEN_TEXT.length;

/**
 * Token layout (docs/protocol.md, "Fencing tokens"), most significant bits first:
 *
 *     | round: 32 bits | node id: 8 bits | sequence: 24 bits |
 *     |------------ epoch: 40 bits ------|
 *
 * - **round**: seconds since 2026-01-01T00:00:00Z when the epoch was taken, or one above the highest
 *   round the node knew of if that is larger. 2^32 rounds last until 2162; tokens stay below 2^63
 *   (a signed 64-bit column holds them) until 2094.
 * - **node id**: the taking node's id (its position in `--peers`, or `--node-id`), so two nodes can
 *   never take the same epoch, whatever they know.
 * - **sequence**: 1, 2, 3… within the epoch; when it runs out the node takes a new epoch.
 *
 * Every token of a larger epoch is larger than every token of a smaller one.
 */
export const ROUND_BITS = 32;
export const NODE_ID_BITS = 8;
export const EPOCH_BITS = ROUND_BITS + NODE_ID_BITS;
export const SEQUENCE_BITS = 24;
export const MAX_ROUND: bigint = (1n << BigInt(ROUND_BITS)) - 1n;
export const MAX_NODE_ID = (1 << NODE_ID_BITS) - 1;
export const MAX_EPOCH: bigint = (1n << BigInt(EPOCH_BITS)) - 1n;
export const MAX_SEQUENCE: bigint = (1n << BigInt(SEQUENCE_BITS)) - 1n;
const SEQUENCE_SHIFT = BigInt(SEQUENCE_BITS);
const NODE_ID_SHIFT = BigInt(NODE_ID_BITS);
const NODE_ID_MASK = BigInt(MAX_NODE_ID);

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

/** True for an epoch the layout can hold: 0..MAX_EPOCH. */
export function isValidEpoch(epoch: bigint): boolean {
  return epoch >= 0n && epoch <= MAX_EPOCH;
}

export function composeToken(epoch: bigint, sequence: bigint): bigint {
  if (!isValidEpoch(epoch)) throw new RangeError(`epoch ${epoch} is outside 0..${MAX_EPOCH}`);
  if (sequence < 0n || sequence > MAX_SEQUENCE) {
    throw new RangeError(`sequence ${sequence} is outside 0..${MAX_SEQUENCE}`);
  }
  return (epoch << SEQUENCE_SHIFT) | sequence;
}

export function composeEpoch(round: bigint, nodeId: number): bigint {
  if (round < 0n || round > MAX_ROUND) throw new RangeError(`round ${round} is outside 0..${MAX_ROUND}`);
  if (!Number.isInteger(nodeId) || nodeId < 0 || nodeId > MAX_NODE_ID) {
    throw new RangeError(`node id ${nodeId} is outside 0..${MAX_NODE_ID}`);
  }
  return (round << NODE_ID_SHIFT) | BigInt(nodeId);
}

export function epochRound(epoch: bigint): bigint {
  if (!isValidEpoch(epoch)) throw new RangeError(`epoch ${epoch} is outside 0..${MAX_EPOCH}`);
  return epoch >> NODE_ID_SHIFT;
}

export function epochNodeId(epoch: bigint): number {
  if (!isValidEpoch(epoch)) throw new RangeError(`epoch ${epoch} is outside 0..${MAX_EPOCH}`);
  return Number(epoch & NODE_ID_MASK);
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
