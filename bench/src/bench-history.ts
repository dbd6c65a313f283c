import { figureSpec, formatValue } from "./headline-figures.js";

/**
 * bench/history.jsonl: one JSON line per `pnpm bench:all` run, oldest first, appended and never
 * rewritten; and the rule that warns when lockd's lead on a figure shrinks. Pure: the callers read
 * and append the file.
 */
export interface FigureRecord {
  readonly system: string;
  readonly figure: string;
  readonly unit: string;
  /** null when the run measured nothing (JSON has no NaN). */
  readonly value: number | null;
  /** lockd's advantage (headline-figures.ts); null for lockd's own rows. */
  readonly ratio: number | null;
}

export interface HistoryEntry {
  /** ISO time of the run's end. */
  readonly date: string;
  /** `git rev-parse HEAD`. */
  readonly commit: string;
  /** Whether the work tree had changes (other than this file) when it ran. */
  readonly dirty: boolean;
  readonly node: string;
  /** The 1, 5 and 15 minute load averages at the run's start and end. */
  readonly load: { readonly start: readonly number[]; readonly end: readonly number[] };
  /** Which CPUs ran what, per kind of figure. */
  readonly pinning: Readonly<Record<string, string>>;
  /** How each system's load connected (connections, pools, sessions). */
  readonly setup?: Readonly<Record<string, string>>;
  readonly durationMs: number;
  readonly rounds: number;
  readonly figures: readonly FigureRecord[];
}

/** What to append to a history file whose text is `existing`: one line (after a newline if it lacks one). */
export function historyAppend(existing: string, entry: HistoryEntry): string {
  const separator = existing === "" || existing.endsWith("\n") ? "" : "\n";
  return `${separator}${JSON.stringify(entry)}\n`;
}

/** The entries of a history file's text; a line that is not an entry throws, naming its line number. */
export function parseHistory(text: string): HistoryEntry[] {
  const entries: HistoryEntry[] = [];
  text.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    let entry: HistoryEntry;
    try {
      entry = JSON.parse(line) as HistoryEntry;
    } catch (error) {
      throw new Error(`history line ${index + 1}: not JSON`, { cause: error });
    }
    if (typeof entry.commit !== "string" || !Array.isArray(entry.figures)) {
      throw new Error(`history line ${index + 1}: not a bench:all entry (no commit or figures)`);
    }
    entries.push(entry);
  });
  return entries;
}

/** A ratio below what was recorded last, by more than the allowed drop. */
export interface RatioDrop {
  readonly system: string;
  readonly figure: string;
  readonly ratio: number;
  readonly previous: number;
  readonly previousDate: string;
  readonly previousCommit: string;
}

/** A warning, not a failure: ratios move ±15 % round to round on a shared 2-core machine. */
export const RATIO_DROP_LIMIT = 0.1;

/**
 * Each of `current`'s ratios that is more than `limit` (a fraction) below the last ratio recorded in
 * `history` for the same system and figure. Figures never recorded, or measured as nothing, are skipped.
 */
export function ratioDrops(
  history: readonly HistoryEntry[],
  current: readonly FigureRecord[],
  limit = RATIO_DROP_LIMIT,
): RatioDrop[] {
  const drops: RatioDrop[] = [];
  for (const figure of current) {
    if (figure.ratio === null || !Number.isFinite(figure.ratio)) continue;
    const last = lastRatio(history, figure.system, figure.figure);
    if (last !== undefined && figure.ratio < last.ratio * (1 - limit)) {
      drops.push({
        system: figure.system,
        figure: figure.figure,
        ratio: figure.ratio,
        previous: last.ratio,
        previousDate: last.entry.date,
        previousCommit: last.entry.commit,
      });
    }
  }
  return drops;
}

function lastRatio(
  history: readonly HistoryEntry[],
  system: string,
  figure: string,
): { ratio: number; entry: HistoryEntry } | undefined {
  for (let index = history.length - 1; index >= 0; index--) {
    const entry = history[index]!;
    const found = entry.figures.find((record) => record.system === system && record.figure === figure);
    if (found?.ratio != null && Number.isFinite(found.ratio)) return { ratio: found.ratio, entry };
  }
  return undefined;
}

export function dropWarning(drop: RatioDrop): string {
  // One decimal: a drop just past the limit must not print as the limit itself.
  const percent = ((1 - drop.ratio / drop.previous) * 100).toFixed(1);
  const label = figureSpec(drop.figure)?.label ?? drop.figure;
  return (
    `WARNING ${drop.figure} (${label}) vs ${drop.system}: ratio ${drop.ratio.toFixed(3)}, ${percent} % below ` +
    `the last recorded ${drop.previous.toFixed(3)} (${drop.previousDate.slice(0, 10)}, ${drop.previousCommit.slice(0, 8)})`
  );
}

/** A record's value as the tables print it. */
export function recordValue(record: FigureRecord): string {
  return formatValue(record.value, (figureSpec(record.figure)?.unit ?? "") as "/s" | "ms" | "");
}
