import { median } from "./report.js";

/**
 * The headline figures of `pnpm bench:all`, and how a system's value compares with lockd's. Pure.
 *
 * A ratio is lockd's advantage, so that above 1 always means lockd does better: lockd ÷ the other for
 * figures where higher is better (rates, fairness), the other ÷ lockd where lower is better (times).
 */
export interface FigureSpec {
  readonly id: string;
  readonly label: string;
  readonly unit: "/s" | "ms" | "";
  readonly better: "higher" | "lower";
}

export const FIGURES: readonly FigureSpec[] = [
  { id: "cycles_1024", label: "acquire+release cycles, 1024 in flight", unit: "/s", better: "higher" },
  { id: "cycles_64", label: "acquire+release cycles, 64 in flight", unit: "/s", better: "higher" },
  { id: "cycle_p50_sequential", label: "acquire+release p50, sequential", unit: "ms", better: "lower" },
  { id: "contend64_grants", label: "64 contenders on one key: grants", unit: "/s", better: "higher" },
  {
    id: "contend64_handoffs",
    label: "64 contenders on one key: real handoffs",
    unit: "/s",
    better: "higher",
  },
  { id: "contend64_jain", label: "64 contenders on one key: Jain's index", unit: "", better: "higher" },
  { id: "contend64_wait_p99", label: "64 contenders on one key: wait p99", unit: "ms", better: "lower" },
];

export function figureSpec(id: string): FigureSpec | undefined {
  return FIGURES.find((spec) => spec.id === id);
}

/** lockd's advantage over `other` on one figure (above 1: lockd does better). */
export function advantage(spec: FigureSpec, lockd: number, other: number): number {
  return spec.better === "higher" ? lockd / other : other / lockd;
}

/** One round's values of one figure, by system (a round runs every system once, back to back). */
export type RoundValues = Readonly<Record<string, number>>;

export interface FigureSummary {
  readonly system: string;
  /** The median over the rounds. */
  readonly value: number;
  /**
   * The median of the rounds' own ratios (each against lockd's run of the same round, its neighbour
   * in time, so that a shared machine's swings hit both); null for lockd itself.
   */
  readonly ratio: number | null;
}

/** Per system: the median value and the median of the per-round ratios against lockd. */
export function summarizeFigure(
  spec: FigureSpec,
  systems: readonly string[],
  rounds: readonly RoundValues[],
): FigureSummary[] {
  return systems.map((system) => ({
    system,
    value: median(rounds.map((round) => round[system]!)),
    ratio:
      system === "lockd"
        ? null
        : median(rounds.map((round) => advantage(spec, round.lockd!, round[system]!))),
  }));
}

/** A value with its unit, for tables: rates as whole numbers, times and indexes to three decimals. */
export function formatValue(value: number | null, unit: FigureSpec["unit"]): string {
  if (value === null || !Number.isFinite(value)) return "n/a";
  if (unit === "/s") return `${Math.round(value).toLocaleString("en-US")}/s`;
  return unit === "ms" ? `${value.toFixed(3)} ms` : value.toFixed(3);
}
