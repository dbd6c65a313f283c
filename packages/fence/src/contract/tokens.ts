import fc from "fast-check";
import { MAX_TOKEN } from "../token.js";

const TWO_53 = 2n ** 53n;
const TWO_63 = 2n ** 63n;

/** Where doubles, signed 64-bit integers and the u64 range run out. */
export const BOUNDARY_TOKENS: readonly bigint[] = [
  0n,
  TWO_53 - 1n,
  TWO_53,
  TWO_53 + 1n,
  TWO_63 - 1n,
  TWO_63,
  MAX_TOKEN,
];

const anyToken = fc.bigInt({ min: 0n, max: MAX_TOKEN });
const nearBoundary = fc
  .tuple(fc.constantFrom(...BOUNDARY_TOKENS), fc.integer({ min: -2, max: 2 }))
  .map(([boundary, offset]) => boundary + BigInt(offset))
  .filter((token) => token >= 0n && token <= MAX_TOKEN);

/**
 * Pairs (first, second) across the u64 range. Half the time `second` is a neighbour of `first`, since
 * equal-length decimals that differ in the last digit are where string comparisons go wrong.
 */
export const tokenPairs = fc.oneof(nearBoundary, anyToken).chain((first) =>
  fc.tuple(
    fc.constant(first),
    fc.oneof(
      anyToken,
      nearBoundary,
      fc
        .integer({ min: -1, max: 1 })
        .map((offset) => first + BigInt(offset))
        .filter((token) => token >= 0n && token <= MAX_TOKEN),
    ),
  ),
);

export function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}
