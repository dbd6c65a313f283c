import { TIMER_MAX_MS } from "@lock/server";
import { ConfigError } from "./address.js";
import type { Setting } from "./secrets.js";

/**
 * Seconds with at most 3 decimals, as whole milliseconds from `minMs` to the longest delay Node's
 * timers support. A longer delay does not wait longer: Node fires it after 1 ms, which made
 * `--idle-timeout 4294968` close every connection at once.
 */
export function parseSeconds(setting: Setting, minMs: number): number {
  if (!/^\d+(\.\d{1,3})?$/.test(setting.text)) {
    throw new ConfigError(
      `${setting.origin}: expected seconds (a non-negative number, at most 3 decimals), got "${setting.text}"`,
    );
  }
  const ms = Math.round(Number(setting.text) * 1000);
  if (ms < minMs) {
    throw new ConfigError(`${setting.origin}: must be at least ${minMs / 1000} s, got "${setting.text}"`);
  }
  if (ms > TIMER_MAX_MS) {
    throw new ConfigError(
      `${setting.origin}: must be at most ${TIMER_MAX_MS / 1000} s (the longest delay of a Node timer), got "${setting.text}"`,
    );
  }
  return ms;
}

/** A whole number from `min` up to the largest exact integer. */
export function parseCount(setting: Setting, min: number): number {
  if (!/^\d+$/.test(setting.text)) {
    throw new ConfigError(`${setting.origin}: expected a whole number, got "${setting.text}"`);
  }
  const count = Number(setting.text);
  if (count < min) throw new ConfigError(`${setting.origin}: must be at least ${min}, got "${setting.text}"`);
  if (!Number.isSafeInteger(count)) {
    throw new ConfigError(
      `${setting.origin}: must be at most ${Number.MAX_SAFE_INTEGER}, got "${setting.text}"`,
    );
  }
  return count;
}
