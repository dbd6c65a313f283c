import type { EngineMeter, HolderKind } from "@lock/server";
import { Gauge, type Registry } from "prom-client";
import type { KeyFamilies } from "./key-families.js";

/**
 * Bucket bounds, in ms, of the wait and hold histograms: a lock wait or hold runs from well under a
 * millisecond (an uncontended grant on loopback) to minutes (a batch job's lease), so the buckets
 * go from 0.1 ms to 10 min, about 2-3 per decade; longer ones land in +Inf.
 */
export const CONTENTION_BUCKETS_MS = [
  0.1, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000,
  300_000, 600_000,
] as const;
const BUCKETS = CONTENTION_BUCKETS_MS.length + 1; // with +Inf
const KINDS: readonly HolderKind[] = ["exclusive", "shared", "permit"];
const KIND_INDEX: Record<HolderKind, number> = { exclusive: 0, shared: 1, permit: 2 };

/** One family's figures for the status page. */
export interface FamilySummary {
  readonly family: string;
  readonly held: number;
  readonly waiting: number;
  readonly grants: number;
  /** Estimated from the histogram as Prometheus' histogram_quantile would (null: no grant yet). */
  readonly waitP99Ms: number | null;
  readonly holdP99Ms: number | null;
}

/**
 * Wait and hold histograms and held/waiting gauges by key family (and holder kind), kept in flat
 * typed arrays indexed by family: the engine's hooks cost a family lookup at grant and a few array
 * writes, and the counts are only formatted when Prometheus scrapes.
 * Not safe to share between engines: one per lockd.
 */
export class ContentionMetrics implements EngineMeter {
  readonly families: KeyFamilies;
  /** Per (family, kind) slot: bucket counts, not cumulative (cumulated at scrape). */
  readonly #wait: Float64Array;
  readonly #hold: Float64Array;
  readonly #waitSum: Float64Array;
  readonly #holdSum: Float64Array;
  readonly #held: Int32Array;
  /** Per family (a queued acquire's kind is not told). */
  readonly #waiting: Int32Array;
  /** Slots that ever had a value: only they are exported (label sets appear, never vanish). */
  readonly #used: Uint8Array;

  constructor(families: KeyFamilies, limit: number) {
    this.families = families;
    const slots = (limit + 1) * KINDS.length;
    this.#wait = new Float64Array(slots * BUCKETS);
    this.#hold = new Float64Array(slots * BUCKETS);
    this.#waitSum = new Float64Array(slots);
    this.#holdSum = new Float64Array(slots);
    this.#held = new Int32Array(slots);
    this.#waiting = new Int32Array(limit + 1);
    this.#used = new Uint8Array(slots);
  }

  /** Times are late by at most a synchronous run of the engine (see RecentReading). */
  readonly reusesReadings = true;

  held(key: string, kind: HolderKind, waitedMs: number | undefined): number {
    const slot = this.families.numberOf(key) * 3 + KIND_INDEX[kind];
    this.#held[slot]! += 1;
    this.#used[slot] = 1;
    if (waitedMs === undefined) return slot;
    this.#wait[slot * BUCKETS + bucketOf(waitedMs)]! += 1;
    this.#waitSum[slot]! += waitedMs;
    return slot;
  }

  freed(slot: number, heldMs: number | undefined): void {
    this.#held[slot]! -= 1;
    if (heldMs === undefined) return;
    this.#hold[slot * BUCKETS + bucketOf(heldMs)]! += 1;
    this.#holdSum[slot]! += heldMs;
  }

  queued(key: string): void {
    const family = this.families.numberOf(key);
    this.#waiting[family]! += 1;
    this.#used[family * 3] = 1;
  }

  unqueued(key: string): void {
    this.#waiting[this.families.numberOf(key)]! -= 1;
  }

  cleared(): void {
    this.#held.fill(0);
    this.#waiting.fill(0);
  }

  /** The `limit` families with the most waiting, then the most held (status page). */
  summary(limit: number): FamilySummary[] {
    const rows: FamilySummary[] = [];
    this.families.names.forEach((family, number) => {
      if (!this.#familyUsed(number)) return;
      let held = 0;
      for (let kind = 0; kind < KINDS.length; kind++) held += this.#held[number * 3 + kind]!;
      const wait = this.#familyBuckets(this.#wait, number);
      const hold = this.#familyBuckets(this.#hold, number);
      const grants = wait.reduce((sum, count) => sum + count, 0);
      const waiting = this.#waiting[number]!;
      rows.push({
        family,
        held,
        waiting,
        grants,
        waitP99Ms: quantile(wait, 0.99),
        holdP99Ms: quantile(hold, 0.99),
      });
    });
    rows.sort((a, b) => b.waiting - a.waiting || b.held - a.held || b.grants - a.grants);
    return rows.slice(0, limit);
  }

  /**
   * Adds the held and waiting gauges to `registry` (prom-client Gauges whose `collect` copies the
   * counts in at scrape time). The histograms are not in it: see `histogramText`.
   */
  register(registry: Registry): void {
    const held = this.#held;
    const slots = () => this.#slots();
    new Gauge({
      name: "lockd_key_family_held",
      help: "Holders now, by key family and holder kind",
      labelNames: ["family", "kind"],
      registers: [registry],
      collect() {
        for (const [family, kind, slot] of slots()) this.set({ family, kind }, held[slot]!);
      },
    });
    const waiting = this.#waiting;
    const families = this.families;
    const used = (number: number) => this.#familyUsed(number);
    new Gauge({
      name: "lockd_key_family_waiting",
      help: "Acquires queued now, by key family",
      labelNames: ["family"],
      registers: [registry],
      collect() {
        families.names.forEach((family, number) => {
          if (used(number)) this.set({ family }, waiting[number]!);
        });
      },
    });
  }

  /**
   * The wait and hold histograms in the Prometheus text exposition format, for lockd's /metrics to
   * append to the registry's output. prom-client's Histogram only takes one labelled `observe` per
   * value, which hashes its labels each time (far too slow for every grant and release), and it has
   * no documented way to hand it counts kept elsewhere; the text format is a documented standard.
   */
  histogramText(): string {
    return (
      histogramText(
        "lockd_key_family_wait_seconds",
        "Time acquires waited from enqueue to grant (0: granted on arrival), by key family and holder kind",
        this.#slots(),
        this.#wait,
        this.#waitSum,
      ) +
      histogramText(
        "lockd_key_family_hold_seconds",
        "Time grants held their key, grant to release or expiry, by key family and holder kind",
        this.#slots(),
        this.#hold,
        this.#holdSum,
      )
    );
  }

  #familyUsed(family: number): boolean {
    for (let kind = 0; kind < KINDS.length; kind++) if (this.#used[family * 3 + kind] === 1) return true;
    return false;
  }

  /** Used slots as [family, kind, slot]. */
  #slots(): Array<[string, HolderKind, number]> {
    const slots: Array<[string, HolderKind, number]> = [];
    this.families.names.forEach((family, number) => {
      KINDS.forEach((kind, index) => {
        const slot = number * 3 + index;
        if (this.#used[slot] === 1) slots.push([family, kind, slot]);
      });
    });
    return slots;
  }

  #familyBuckets(counts: Float64Array, family: number): number[] {
    const buckets = new Array<number>(BUCKETS).fill(0);
    for (let kind = 0; kind < KINDS.length; kind++)
      for (let bucket = 0; bucket < BUCKETS; bucket++)
        buckets[bucket]! += counts[(family * 3 + kind) * BUCKETS + bucket]!;
    return buckets;
  }
}

/** Bucket bounds as `le` label values, in seconds (with +Inf). */
const LE = [...CONTENTION_BUCKETS_MS.map((ms) => String(ms / 1000)), "+Inf"];

/** One histogram's HELP, TYPE and samples for the used slots (counts cumulated here). */
function histogramText(
  name: string,
  help: string,
  slots: Array<[string, HolderKind, number]>,
  counts: Float64Array,
  sums: Float64Array,
): string {
  let text = `# HELP ${name} ${help}\n# TYPE ${name} histogram\n`;
  for (const [family, kind, slot] of slots) {
    const labels = `family="${labelValue(family)}",kind="${kind}"`;
    let cumulative = 0;
    for (let bucket = 0; bucket < BUCKETS; bucket++) {
      cumulative += counts[slot * BUCKETS + bucket]!;
      text += `${name}_bucket{${labels},le="${LE[bucket]}"} ${cumulative}\n`;
    }
    text += `${name}_sum{${labels}} ${sums[slot]! / 1000}\n${name}_count{${labels}} ${cumulative}\n`;
  }
  return text;
}

/** A label value escaped as the text format says (a family comes from a client's key). */
function labelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (char) => (char === "\n" ? "\\n" : `\\${char}`));
}

/** The bucket a value falls in (the last: +Inf). */
function bucketOf(ms: number): number {
  let bucket = 0;
  while (bucket < CONTENTION_BUCKETS_MS.length && ms > CONTENTION_BUCKETS_MS[bucket]!) bucket++;
  return bucket;
}

/** Prometheus' histogram_quantile on non-cumulative bucket counts, in ms; null without counts. */
export function quantile(counts: readonly number[], q: number): number | null {
  const total = counts.reduce((sum, count) => sum + count, 0);
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (let bucket = 0; bucket < counts.length; bucket++) {
    const count = counts[bucket]!;
    if (below + count >= rank && count > 0) {
      // +Inf: the highest finite bound, as histogram_quantile answers.
      if (bucket >= CONTENTION_BUCKETS_MS.length) return CONTENTION_BUCKETS_MS.at(-1)!;
      const lower = bucket === 0 ? 0 : CONTENTION_BUCKETS_MS[bucket - 1]!;
      const upper = CONTENTION_BUCKETS_MS[bucket]!;
      return lower + (upper - lower) * ((rank - below) / count);
    }
    below += count;
  }
  return CONTENTION_BUCKETS_MS.at(-1)!;
}
