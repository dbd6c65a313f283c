/**
 * Canonical unsigned decimals: `0` or `[1-9][0-9]*`. Tokens, epochs, sequence numbers and the
 * integer milliseconds of peer frames all use this form, so every value has exactly one spelling.
 */

const DIGIT_0 = 48;
const DIGIT_9 = 57;

/** True if `text` is a canonical unsigned decimal of at most `maxDigits` digits. */
export function isCanonicalDecimal(text: string, maxDigits: number): boolean {
  const length = text.length;
  if (length === 0 || length > maxDigits) return false;
  if (text.charCodeAt(0) === DIGIT_0) return length === 1;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c < DIGIT_0 || c > DIGIT_9) return false;
  }
  return true;
}

/** A canonical decimal up to 2^53-1, as a number (peer-frame milliseconds and counts). */
export function parseSafeInteger(text: string): number | undefined {
  if (!isCanonicalDecimal(text, 16)) return undefined;
  const value = Number(text);
  return value <= Number.MAX_SAFE_INTEGER ? value : undefined;
}

/** Formats a safe non-negative integer; `what` names the field in the RangeError. */
export function formatSafeInteger(value: number, what: string): string {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${what} must be a non-negative safe integer, got ${String(value)}`);
  }
  return String(value);
}
