/** Small shared helpers for benchmark output: every bench prints plain, greppable lines. */
import { loadavg } from "node:os";

export function formatRate(perSecond: number): string {
  return `${Math.round(perSecond).toLocaleString("en-US")}/s`;
}

/** Percentile of an ascending-sorted array of numbers (nearest rank). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

/** Median of unsorted numbers. */
export function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

export function printRow(name: string, fields: Record<string, string | number>): void {
  const parts = Object.entries(fields).map(([k, v]) => `${k}=${typeof v === "number" ? round(v) : v}`);
  console.log(`${name.padEnd(36)} ${parts.join("  ")}`);
}

function round(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString("en-US");
  return v.toFixed(3);
}

/**
 * Warms up for `warmupMs` (JIT, socket buffers, script caches), then measures for `durationMs`:
 * `measuring(true)` at the start, `measuring(false)` at the end. Returns the measured seconds.
 */
export async function measurementWindow(
  durationMs: number,
  measuring: (on: boolean) => void,
  warmupMs = 500,
): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, warmupMs));
  measuring(true);
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, durationMs));
  measuring(false);
  return (performance.now() - started) / 1000;
}

/**
 * Jain's fairness index of per-contender counts: (Σx)² / (n·Σx²). 1 when every contender got the
 * same share, 1/n when one got everything; NaN when nobody got anything.
 */
export function jainIndex(counts: readonly number[]): number {
  let sum = 0;
  let squares = 0;
  for (const count of counts) {
    sum += count;
    squares += count * count;
  }
  return squares === 0 ? Number.NaN : (sum * sum) / (counts.length * squares);
}

/** The machine's load averages (1, 5, 15 min), to print beside every figure on a shared machine. */
export function loadLine(): string {
  return loadavg()
    .map((load) => load.toFixed(2))
    .join(" ");
}
