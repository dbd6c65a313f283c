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
const FIRST_BOUND_MS = CONTENTION_BUCKETS_MS[0];
/**
 * A (family, kind) slot's figures, side by side in one Float64Array: a grant and its release touch
 * two or three nearby cache lines of one array, not a line in each of six arrays.
 */
const HELD = 0;
const USED = 1;
const WAIT_SUM = 2;
const HOLD_SUM = 3;
const WAIT = 4;
const HOLD = WAIT + BUCKETS;
const STRIDE = HOLD + BUCKETS;
const KINDS: readonly HolderKind[] = ["exclusive", "shared", "permit"];

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
  /**
   * Per (family, kind) slot, STRIDE numbers from slot × STRIDE: holders now, used (1 once the slot
   * had a value: only used slots are exported, so label sets appear and never vanish), wait and
   * hold sums, then wait and hold bucket counts (not cumulative: cumulated at scrape).
   */
  readonly #data: Float64Array;
  /** Per family (a queued acquire's kind is not told). */
  readonly #waiting: Int32Array;

  constructor(families: KeyFamilies, limit: number) {
    this.families = families;
    this.#data = new Float64Array((limit + 1) * KINDS.length * STRIDE);
    this.#waiting = new Int32Array(limit + 1);
  }

  /** Times are late by at most a synchronous run of the engine (see RecentReading). */
  readonly reusesReadings = true;

  held(key: string, kind: HolderKind, waitedMs: number | undefined): number {
    // Kinds compared, not looked up in a record: this runs on every grant.
    const slot = this.families.numberOf(key) * 3 + (kind === "exclusive" ? 0 : kind === "shared" ? 1 : 2);
    const data = this.#data;
    const at = slot * STRIDE;
    data[at + HELD]! += 1;
    data[at + USED] = 1;
    if (waitedMs === undefined) return slot;
    data[at + WAIT + bucketOf(waitedMs)]! += 1;
    data[at + WAIT_SUM]! += waitedMs;
    return slot;
  }

  freed(slot: number, heldMs: number | undefined): void {
    const data = this.#data;
    const at = slot * STRIDE;
    data[at + HELD]! -= 1;
    if (heldMs === undefined) return;
    data[at + HOLD + bucketOf(heldMs)]! += 1;
    data[at + HOLD_SUM]! += heldMs;
  }

  queued(key: string): void {
    const family = this.families.numberOf(key);
    this.#waiting[family]! += 1;
    this.#data[family * 3 * STRIDE + USED] = 1;
  }

  unqueued(key: string): void {
    this.#waiting[this.families.numberOf(key)]! -= 1;
  }

  cleared(): void {
    for (let at = HELD; at < this.#data.length; at += STRIDE) this.#data[at] = 0;
    this.#waiting.fill(0);
  }

  /** The `limit` families with the most waiting, then the most held (status page). */
  summary(limit: number): FamilySummary[] {
    const rows: FamilySummary[] = [];
    this.families.names.forEach((family, number) => {
      if (!this.#familyUsed(number)) return;
      let held = 0;
      for (let kind = 0; kind < KINDS.length; kind++)
        held += this.#data[(number * 3 + kind) * STRIDE + HELD]!;
      const wait = this.#familyBuckets(WAIT, number);
      const hold = this.#familyBuckets(HOLD, number);
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
    const data = this.#data;
    const slots = () => this.#slots();
    new Gauge({
      name: "lockd_key_family_held",
      help: "Holders now, by key family and holder kind",
      labelNames: ["family", "kind"],
      registers: [registry],
      collect() {
        for (const [family, kind, slot] of slots()) this.set({ family, kind }, data[slot * STRIDE + HELD]!);
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
        this.#data,
        WAIT,
        WAIT_SUM,
      ) +
      histogramText(
        "lockd_key_family_hold_seconds",
        "Time grants held their key, grant to release or expiry, by key family and holder kind",
        this.#slots(),
        this.#data,
        HOLD,
        HOLD_SUM,
      )
    );
  }

  #familyUsed(family: number): boolean {
    for (let kind = 0; kind < KINDS.length; kind++)
      if (this.#data[(family * 3 + kind) * STRIDE + USED] === 1) return true;
    return false;
  }

  /** Used slots as [family, kind, slot]. */
  #slots(): Array<[string, HolderKind, number]> {
    const slots: Array<[string, HolderKind, number]> = [];
    this.families.names.forEach((family, number) => {
      KINDS.forEach((kind, index) => {
        const slot = number * 3 + index;
        if (this.#data[slot * STRIDE + USED] === 1) slots.push([family, kind, slot]);
      });
    });
    return slots;
  }

  /** A family's bucket counts (from `offset`: WAIT or HOLD) summed over holder kinds. */
  #familyBuckets(offset: number, family: number): number[] {
    const buckets = new Array<number>(BUCKETS).fill(0);
    for (let kind = 0; kind < KINDS.length; kind++)
      for (let bucket = 0; bucket < BUCKETS; bucket++)
        buckets[bucket]! += this.#data[(family * 3 + kind) * STRIDE + offset + bucket]!;
    return buckets;
  }
}

/** Bucket bounds as `le` label values, in seconds (with +Inf). */
const LE = [...CONTENTION_BUCKETS_MS.map((ms) => String(ms / 1000)), "+Inf"];

/** One histogram's HELP, TYPE and samples for the used slots (counts and sum at those offsets of a slot; cumulated here). */
function histogramText(
  name: string,
  help: string,
  slots: Array<[string, HolderKind, number]>,
  data: Float64Array,
  counts: number,
  sum: number,
): string {
  let text = `# HELP ${name} ${help}\n# TYPE ${name} histogram\n`;
  for (const [family, kind, slot] of slots) {
    const labels = `family="${labelValue(family)}",kind="${kind}"`;
    let cumulative = 0;
    for (let bucket = 0; bucket < BUCKETS; bucket++) {
      cumulative += data[slot * STRIDE + counts + bucket]!;
      text += `${name}_bucket{${labels},le="${LE[bucket]}"} ${cumulative}\n`;
    }
    text += `${name}_sum{${labels}} ${data[slot * STRIDE + sum]! / 1000}\n${name}_count{${labels}} ${cumulative}\n`;
  }
  return text;
}

/** A label value escaped as the text format says (a family comes from a client's key). */
function labelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (char) => (char === "\n" ? "\\n" : `\\${char}`));
}

/** The bucket a value falls in (the last: +Inf). */
function bucketOf(ms: number): number {
  // Most waits are none (a grant on arrival) and most holds in a busy lockd are short.
  if (ms <= FIRST_BOUND_MS) return 0;
  let bucket = 1;
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
