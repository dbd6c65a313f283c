import { usageError } from "./errors.js";

/**
 * The longest duration `lock` accepts: 2^31 - 1 ms (about 24.8 days), the longest delay a Node timer
 * can wait (a longer one fires after 1 ms), as lockd's own flags.
 */
export const MAX_CLI_DURATION_MS = 2_147_483_647;

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

/**
 * Parses `500ms`, `30s`, `1.5s`, `2m`, `1h`, or a bare number of seconds (`30`, `0.25`, as lockd's
 * flags and the wire take them) into integer milliseconds. Integer arithmetic only, so `0.1s` is
 * exactly 100. Throws a usage error naming `what` for anything else, for a value finer than 1 ms,
 * or one over MAX_CLI_DURATION_MS.
 */
export function parseDuration(text: string, what: string): number {
  const match = /^(\d{1,10})(?:\.(\d{1,9}))?(ms|s|m|h)?$/.exec(text);
  if (!match) {
    throw usageError(
      `${what}: expected a duration such as 500ms, 30s, 2m or 1h, got ${JSON.stringify(text)}`,
    );
  }
  const unitMs = UNIT_MS[(match[3] ?? "s") as keyof typeof UNIT_MS];
  const fraction = match[2] ?? "";
  const fractionScale = 10 ** fraction.length;
  const fractionMs = Number(fraction || "0") * unitMs;
  if (fractionMs % fractionScale !== 0) throw usageError(`${what}: ${text} is finer than 1 ms`);
  const ms = Number(match[1]) * unitMs + fractionMs / fractionScale;
  if (ms > MAX_CLI_DURATION_MS)
    throw usageError(`${what}: ${text} is over ${MAX_CLI_DURATION_MS} ms (24.8 days)`);
  return ms;
}

/** Milliseconds for humans: `850ms`, `12.3s`, `4m05s`, `2h03m`. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)}s`;
  const seconds = Math.floor(ms / 1_000);
  if (seconds < 3_600) return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, "0")}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 24 * 60) return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, "0")}m`;
  return `${Math.floor(minutes / 1440)}d${String(Math.floor(minutes / 60) % 24).padStart(2, "0")}h`;
}
