/** Uniformly distributed numbers in [0, 1), as `Math.random` gives; tests pass a scripted one. */
export type Random = () => number;

/**
 * `baseMs` plus a uniformly random part of `spreadMs`, in whole ms: a value in
 * [baseMs, baseMs + spreadMs). Many clients that lost their server at the same moment (a lockd
 * restart) would otherwise all try again at the same moment too, and keep doing so in lockstep;
 * the random part spreads them out. Never less than `baseMs`, so a documented interval stays the
 * least time between two attempts.
 */
export function jittered(baseMs: number, spreadMs: number, random: Random): number {
  return baseMs + Math.floor(random() * spreadMs);
}
