/**
 * Durations: decimal seconds with millisecond resolution on the wire (`30`, `0.25`, `007`), integer
 * milliseconds in TypeScript. Integer arithmetic only, so `0.1` is exactly 100 ms, never 100.00000000000001.
 */

const DIGIT_0 = 48;
const DOT = 46;
const MAX_WHOLE_DIGITS = 10;
const MAX_FRACTION_DIGITS = 3;
// Scales a fraction of 1, 2 or 3 digits to milliseconds ("5" → 500, "25" → 250, "125" → 125).
const FRACTION_SCALE = [0, 100, 10, 1] as const;

/** The largest duration the wire can carry: 9,999,999,999.999 s. */
export const MAX_DURATION_MS = 9_999_999_999_999;

/** Parses `[0-9]{1,10}(\.[0-9]{1,3})?` into integer milliseconds; undefined for anything else. */
export function parseSeconds(text: string): number | undefined {
  const length = text.length;
  let whole = 0;
  let i = 0;
  for (; i < length; i++) {
    const digit = text.charCodeAt(i) - DIGIT_0;
    if (digit < 0 || digit > 9) break;
    whole = whole * 10 + digit;
  }
  if (i === 0 || i > MAX_WHOLE_DIGITS) return undefined;
  if (i === length) return whole * 1000;
  if (text.charCodeAt(i) !== DOT) return undefined;
  const fractionDigits = length - i - 1;
  if (fractionDigits < 1 || fractionDigits > MAX_FRACTION_DIGITS) return undefined;
  let fraction = 0;
  for (i++; i < length; i++) {
    const digit = text.charCodeAt(i) - DIGIT_0;
    if (digit < 0 || digit > 9) return undefined;
    fraction = fraction * 10 + digit;
  }
  return whole * 1000 + fraction * FRACTION_SCALE[fractionDigits]!;
}

/** Formats integer milliseconds as the shortest exact decimal seconds (1500 → "1.5", 1 → "0.001"). */
export function formatSeconds(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0 || ms > MAX_DURATION_MS) {
    throw new RangeError(`duration must be integer milliseconds in 0..${MAX_DURATION_MS}, got ${String(ms)}`);
  }
  const fraction = ms % 1000;
  const whole = (ms - fraction) / 1000;
  if (fraction === 0) return String(whole);
  if (fraction % 100 === 0) return `${whole}.${fraction / 100}`;
  if (fraction % 10 === 0) return `${whole}.${fraction < 100 ? "0" : ""}${fraction / 10}`;
  return `${whole}.${fraction < 10 ? "00" : fraction < 100 ? "0" : ""}${fraction}`;
}
