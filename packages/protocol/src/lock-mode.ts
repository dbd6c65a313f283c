import { isCanonicalDecimal } from "./decimal.js";

/**
 * How an acquire wants to hold its key (`Q`/`W` requests, the `mode` field; docs/protocol.md,
 * "Lock modes"): `x` exclusive, `s` shared (a reader of a read/write lock), `p<N>` one of the N
 * permits of a counting semaphore.
 */
export type LockMode =
  | { readonly kind: "exclusive" }
  | { readonly kind: "shared" }
  | { readonly kind: "permit"; readonly limit: number };

/** The most permits a semaphore may have; a slot is 0..limit−1. */
export const MAX_PERMITS = 65_535;

export const EXCLUSIVE: LockMode = Object.freeze({ kind: "exclusive" });
export const SHARED: LockMode = Object.freeze({ kind: "shared" });

/** A semaphore permit mode; throws a RangeError outside 1..MAX_PERMITS. */
export function permits(limit: number): LockMode {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PERMITS)
    throw new RangeError(`permits must be an integer from 1 to ${MAX_PERMITS}, got ${limit}`);
  return { kind: "permit", limit };
}

/** The mode field's text: `x`, `s` or `p<N>` (N canonical decimal, 1..MAX_PERMITS). */
export function formatLockMode(mode: LockMode): string {
  if (mode.kind === "exclusive") return "x";
  if (mode.kind === "shared") return "s";
  permits(mode.limit); // range check
  return `p${mode.limit}`;
}

/** The mode a field names, or undefined if it is malformed or out of range. */
export function parseLockMode(text: string): LockMode | undefined {
  if (text === "x") return EXCLUSIVE;
  if (text === "s") return SHARED;
  if (text.charCodeAt(0) !== 0x70 /* p */) return undefined;
  const digits = text.slice(1);
  if (!isCanonicalDecimal(digits, 5)) return undefined;
  const limit = Number(digits);
  return limit >= 1 && limit <= MAX_PERMITS ? { kind: "permit", limit } : undefined;
}

/** A slot field: `-` (exclusive or shared) or a canonical decimal below MAX_PERMITS. */
export function parseSlot(text: string): number | undefined | null {
  if (text === "-") return undefined;
  if (!isCanonicalDecimal(text, 5)) return null;
  const slot = Number(text);
  return slot < MAX_PERMITS ? slot : null;
}

export function formatSlot(slot: number | undefined): string {
  if (slot === undefined) return "-";
  if (!Number.isInteger(slot) || slot < 0 || slot >= MAX_PERMITS) throw new RangeError(`bad slot ${slot}`);
  return String(slot);
}
