/**
 * Which locks are contended, per key family, from lockd's `/metrics` (docs/operations.md,
 * "Contention by key family"): a few lines for a shell or a health report where no Prometheus runs.
 * With Prometheus, query the same metrics with PromQL instead.
 */

/** One key family, summed over holder kinds (exclusive, shared, permit). */
export interface FamilyContention {
  readonly family: string;
  /** Acquires granted since lockd started (each counted at its grant, with its wait). */
  readonly grants: number;
  /** The mean of those waits, in milliseconds (0 for grants on arrival). */
  readonly meanWaitMs: number;
  /** Holders now. */
  readonly held: number;
  /** Acquires queued now. */
  readonly waiting: number;
}

/** Every `lockd_key_family_*` sample of `name`, summed by its `family` label. */
function sumByFamily(metrics: string, name: string): Map<string, number> {
  const sums = new Map<string, number>();
  const sample = new RegExp(`^${name}\\{(?:[^}]*,)?family="((?:[^"\\\\]|\\\\.)*)"[^}]*\\} (\\S+)$`, "gm");
  for (const [, escaped = "", value = "0"] of metrics.matchAll(sample)) {
    // Prometheus escapes \, " and newlines in label values; a family is a piece of a client's key.
    const family = escaped.replace(/\\(.)/g, (_, char: string) => (char === "n" ? "\n" : char));
    sums.set(family, (sums.get(family) ?? 0) + Number(value));
  }
  return sums;
}

/** The families in lockd's Prometheus text, most waiting first, then most held, then most grants. */
export function parseFamilies(metrics: string): FamilyContention[] {
  const grants = sumByFamily(metrics, "lockd_key_family_wait_seconds_count");
  const waitSeconds = sumByFamily(metrics, "lockd_key_family_wait_seconds_sum");
  const held = sumByFamily(metrics, "lockd_key_family_held");
  const waiting = sumByFamily(metrics, "lockd_key_family_waiting");
  const families = new Set([...grants.keys(), ...held.keys(), ...waiting.keys()]);
  return [...families]
    .map((family) => {
      const count = grants.get(family) ?? 0;
      return {
        family,
        grants: count,
        meanWaitMs: count === 0 ? 0 : ((waitSeconds.get(family) ?? 0) / count) * 1000,
        held: held.get(family) ?? 0,
        waiting: waiting.get(family) ?? 0,
      };
    })
    .sort((a, b) => b.waiting - a.waiting || b.held - a.held || b.grants - a.grants);
}

/** Scrapes lockd's admin server (`--admin`), e.g. `http://127.0.0.1:9090`. */
export async function scrapeFamilies(adminUrl: string): Promise<FamilyContention[]> {
  const response = await fetch(new URL("/metrics", adminUrl));
  if (!response.ok) throw new Error(`GET ${response.url}: HTTP ${response.status}`);
  return parseFamilies(await response.text());
}

/** A fixed-width table, one family a line. */
export function formatFamilies(families: readonly FamilyContention[]): string {
  const rows = families.map((row) => [
    row.family,
    String(row.waiting),
    String(row.held),
    String(row.grants),
    row.meanWaitMs.toFixed(1),
  ]);
  const table = [["family", "waiting", "held", "grants", "mean wait ms"], ...rows];
  const widths =
    table[0]?.map((_, column) => Math.max(...table.map((row) => row[column]?.length ?? 0))) ?? [];
  return table
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
