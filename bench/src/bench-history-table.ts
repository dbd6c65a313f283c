import type { HistoryEntry } from "./bench-history.js";
import { recordValue } from "./bench-history.js";
import { FIGURES } from "./headline-figures.js";

/** Where `pnpm bench:history --readme` puts the table in bench/README.md. */
export const README_START = "<!-- bench:history start -->";
export const README_END = "<!-- bench:history end -->";

const SYSTEM_ORDER = ["lockd", "redis", "postgres", "etcd"];

/**
 * A markdown table of the last `runs` entries, newest first: one row per figure and system, one
 * column per run, each cell the value and lockd's advantage (`2.31×`, above 1: lockd does better).
 * Pure.
 */
export function historyTable(history: readonly HistoryEntry[], runs = 5): string {
  const shown = history.slice(-runs).reverse();
  if (shown.length === 0)
    return "No figures recorded yet: `pnpm bench:all` on a quiet machine records the first.\n";
  const rows = new Map<string, { figure: string; system: string }>();
  for (const entry of shown)
    for (const record of entry.figures)
      rows.set(`${record.figure}\u0000${record.system}`, { figure: record.figure, system: record.system });
  const figureRank = (id: string) => {
    const rank = FIGURES.findIndex((spec) => spec.id === id);
    return rank < 0 ? FIGURES.length : rank;
  };
  const systemRank = (system: string) => {
    const rank = SYSTEM_ORDER.indexOf(system);
    return rank < 0 ? SYSTEM_ORDER.length : rank;
  };
  const ordered = [...rows.values()].sort(
    (a, b) =>
      figureRank(a.figure) - figureRank(b.figure) ||
      a.figure.localeCompare(b.figure) ||
      systemRank(a.system) - systemRank(b.system) ||
      a.system.localeCompare(b.system),
  );
  const header = shown.map(
    (entry) => `${entry.date.slice(0, 10)} ${entry.commit.slice(0, 8)}${entry.dirty ? "+" : ""}`,
  );
  const lines = [
    `| figure | system | ${header.join(" | ")} |`,
    `|---|---|${shown.map(() => "---|").join("")}`,
  ];
  for (const { figure, system } of ordered) {
    const cells = shown.map((entry) => {
      const record = entry.figures.find((found) => found.figure === figure && found.system === system);
      if (record === undefined) return "";
      if (record.system === "lockd") return recordValue(record);
      // No ratio beside another system: one side measured nothing (0/s, no samples).
      return `${recordValue(record)} (${record.ratio === null ? "n/a" : `${record.ratio.toFixed(2)}×`})`;
    });
    lines.push(`| ${figure} | ${system} | ${cells.join(" | ")} |`);
  }
  lines.push(`| load avg (1 min), start → end | | ${shown.map((entry) => loadCell(entry)).join(" | ")} |`);
  return `${lines.join("\n")}\n`;
}

function loadCell(entry: HistoryEntry): string {
  const [start] = entry.load.start;
  const [end] = entry.load.end;
  return `${start?.toFixed(2) ?? "?"} → ${end?.toFixed(2) ?? "?"}`;
}

/** `readme` with the text between the history markers replaced by `table`; throws if a marker is missing. */
export function withHistorySection(readme: string, table: string): string {
  const start = readme.indexOf(README_START);
  const end = readme.indexOf(README_END);
  if (start < 0 || end < start) throw new Error(`the README has no ${README_START} … ${README_END} section`);
  return `${readme.slice(0, start + README_START.length)}\n${table}${readme.slice(end)}`;
}
