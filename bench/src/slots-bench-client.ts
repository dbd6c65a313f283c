import { keySlot } from "@lock/protocol";
import type { EtcdCluster } from "@lock/testkit";
import { formatRate, loadLine, median, printRow } from "./report.js";
import { allSlotsBut, allSlotsTo, type Deployment, startDeployment } from "./slot-clusters.js";
import { runSlotsLoad, type SlotsLoad } from "./slots-workers.js";

/**
 * `pnpm bench:slots client`: one LockClient against a one-node cluster as deployed today (a
 * coordinator, no slot map) and against the same node with a slot map, side by side in alternating
 * rounds (issue #24: the slot-aware client within 5 % of today's). Two deployments with a map:
 *
 * - mapped: the map gives the cluster all 16384 slots. No key is ever redirected, so the client
 *   never sees an `S` and never fetches the map: this measures the server's slot gate (one
 *   keySlot per request) with the client on its one-cluster path.
 * - routed: the map gives one slot (that no load key hashes to) to a cluster that runs no node.
 *   The client is primed with a key of that slot before the load: its `S` makes the client fetch
 *   the map, so every request of the load is routed by its slot, as with several clusters.
 *
 * Loads: sequential (1 in flight) and pipelined (BENCH_INFLIGHT, default 1024), acquire+release
 * cycles on keys of their own. Pinning: lockd on cpu 0; the load process and etcd on cpu 1.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 3000);
const PIPELINED = Number(process.env.BENCH_INFLIGHT ?? 1024);
const VARIANTS = ["today", "mapped", "routed"] as const;
type Variant = (typeof VARIANTS)[number];
const KEY_PREFIX = "c:";

/** A key whose slot no key of the load (`c:bench:<i>`, i < `inflight`) hashes to. */
function primeKey(inflight: number): string {
  const used = new Set(Array.from({ length: inflight }, (_, i) => keySlot(`${KEY_PREFIX}bench:${i}`)));
  for (let n = 0; ; n++) if (!used.has(keySlot(`prime:${n}`))) return `prime:${n}`;
}

async function startVariants(etcd: EtcdCluster, prime: string): Promise<Map<Variant, Deployment>> {
  const solo = [{ name: "solo", cpu: "0" }];
  const deployments = new Map<Variant, Deployment>();
  try {
    deployments.set("today", await startDeployment(etcd, solo));
    deployments.set("mapped", await startDeployment(etcd, solo, allSlotsTo("solo")));
    const nowhere = new Map([["nowhere", "127.0.0.1:1"]]);
    deployments.set(
      "routed",
      await startDeployment(etcd, solo, allSlotsBut(keySlot(prime), "solo", "nowhere"), nowhere),
    );
  } catch (error) {
    for (const deployment of deployments.values()) deployment.stop();
    throw error;
  }
  return deployments;
}

function rate(load: SlotsLoad): number {
  return load.ops / load.seconds;
}

/** ROUNDS rounds of every variant, in an order rotated each round; each variant's loads. */
async function rounds(
  deployments: ReadonlyMap<Variant, Deployment>,
  name: string,
  inflight: number,
  prime: string,
): Promise<Record<Variant, SlotsLoad[]>> {
  const loads: Record<Variant, SlotsLoad[]> = { today: [], mapped: [], routed: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]!);
    for (const variant of order) {
      const server = deployments.get(variant)!.clusters[0]!.address;
      const primeKey = variant === "routed" ? prime : undefined;
      loads[variant].push(
        await runSlotsLoad("1", {
          server,
          inflight,
          durationMs: DURATION_MS,
          keyPrefix: KEY_PREFIX,
          primeKey,
        }),
      );
    }
    const [today, mapped, routed] = VARIANTS.map((variant) => loads[variant].at(-1)!);
    printRow(`${name} round ${round + 1}`, {
      today: formatRate(rate(today!)),
      mapped: formatRate(rate(mapped!)),
      routed: formatRate(rate(routed!)),
      routed_redirects: String(routed!.redirects),
      load: loadLine(),
    });
  }
  return loads;
}

/** Medians, ratios against today's, and the median of each round's own ratio (steadier on a shared machine). */
function printSummary(name: string, loads: Record<Variant, SlotsLoad[]>): void {
  const medianRate = (variant: Variant) => median(loads[variant].map(rate));
  const paired = (variant: Variant) =>
    median(loads[variant].map((load, i) => rate(load) / rate(loads.today[i]!)));
  printRow(`${name} (medians)`, {
    today: formatRate(medianRate("today")),
    mapped: formatRate(medianRate("mapped")),
    routed: formatRate(medianRate("routed")),
    mapped_ratio: medianRate("mapped") / medianRate("today"),
    routed_ratio: medianRate("routed") / medianRate("today"),
    mapped_paired: paired("mapped"),
    routed_paired: paired("routed"),
    cycle_p50_ms_today: median(loads.today.map((load) => load.cycleP50)),
    cycle_p50_ms_routed: median(loads.routed.map((load) => load.cycleP50)),
    target: "ratios >= 0.95",
  });
}

export async function clientSection(etcd: EtcdCluster): Promise<void> {
  console.log(
    `\n# client: one LockClient, one-node cluster today (coordinator, no map) vs with a slot map (all slots: mapped;` +
      ` the client routing by slot: routed), ${ROUNDS} rotated rounds of ${DURATION_MS} ms (lockd cpu 0; load, etcd cpu 1)`,
  );
  const prime = primeKey(PIPELINED);
  const deployments = await startVariants(etcd, prime);
  try {
    for (const [name, inflight] of [
      ["sequential", 1],
      [`pipelined ${PIPELINED}`, PIPELINED],
    ] as const) {
      printSummary(name, await rounds(deployments, name, inflight, prime));
    }
  } finally {
    for (const deployment of deployments.values()) deployment.stop();
  }
}
