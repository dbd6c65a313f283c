/**
 * Size limits both ends of a connection enforce. They are configurable (lockd `--max-line-bytes`,
 * `--max-key-bytes`), so every parser and decoder takes them as an argument instead of reading a global.
 */
export interface ProtocolLimits {
  /** The longest accepted line in bytes, counting its `\n` (and a `\r` before it). */
  readonly maxLineBytes: number;
  /** The longest accepted key in UTF-8 bytes. */
  readonly maxKeyBytes: number;
}

export const DEFAULT_LIMITS: ProtocolLimits = Object.freeze({ maxLineBytes: 65_536, maxKeyBytes: 1_024 });

/**
 * Throws a RangeError for limits no line could satisfy. A misconfigured limit is a programming or
 * configuration error, so it fails at construction rather than on the first frame.
 */
export function checkLimits(limits: ProtocolLimits): ProtocolLimits {
  checkLineLimit(limits.maxLineBytes);
  if (!Number.isSafeInteger(limits.maxKeyBytes) || limits.maxKeyBytes < 1) {
    throw new RangeError(`maxKeyBytes must be an integer >= 1, got ${limits.maxKeyBytes}`);
  }
  return limits;
}

export function checkLineLimit(maxLineBytes: number): number {
  // The shortest useful line is a verb and its newline.
  if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < 2) {
    throw new RangeError(`maxLineBytes must be an integer >= 2, got ${maxLineBytes}`);
  }
  return maxLineBytes;
}
