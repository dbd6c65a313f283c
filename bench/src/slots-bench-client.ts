import { keySlot } from "@lock/protocol";
import type { EtcdCluster } from "@lock/testkit";
import { formatRate, loadLine, median, printRow } from "./report.js";
import { allSlotsBut, allSlotsTo, cpuMsOf, type Deployment, startDeployment } from "./slot-clusters.js";
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
 * cycles on keys of their own: the rates, and the CPU time per cycle of the load process (the
 * client's cost) and of lockd (the gate's). Pinning: lockd on cpu 0; the load process and etcd on
 * cpu 1.
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

/** One load against one variant, with its lockd's CPU time meanwhile. */
interface Run {
  readonly load: SlotsLoad;
  readonly lockdCpuMs: number;
}

function rate(run: Run): number {
  return run.load.ops / run.load.seconds;
}

/**
 * CPU µs per cycle of the load process and of lockd: their CPU time over the load (warm-up
 * included) over the cycles that run made at its measured rate. Steadier than the rate on a shared
 * machine, where the sequential rate swings with the scheduler's wake-ups.
 */
function cpuPerCycleUs(run: Run, which: "client" | "lockd"): number {
  const cycles = (rate(run) * run.load.wallMs) / 1000;
  return ((which === "client" ? run.load.cpuMs : run.lockdCpuMs) * 1000) / cycles;
}

async function runVariant(deployment: Deployment, inflight: number, primeKey?: string): Promise<Run> {
  const node = deployment.clusters[0]!;
  const before = cpuMsOf(node.child.pid!);
  const load = await runSlotsLoad("1", {
    server: node.address,
    inflight,
    durationMs: DURATION_MS,
    keyPrefix: KEY_PREFIX,
    primeKey,
  });
  return { load, lockdCpuMs: cpuMsOf(node.child.pid!) - before };
}

/** ROUNDS rounds of every variant, in an order rotated each round; each variant's runs. */
async function rounds(
  deployments: ReadonlyMap<Variant, Deployment>,
  name: string,
  inflight: number,
  prime: string,
): Promise<Record<Variant, Run[]>> {
  const runs: Record<Variant, Run[]> = { today: [], mapped: [], routed: [] };
  // One unmeasured run each first: the long-lived lockd processes warm up (JIT, tables).
  const run = (variant: Variant) =>
    runVariant(deployments.get(variant)!, inflight, variant === "routed" ? prime : undefined);
  for (const variant of VARIANTS) await run(variant);
  for (let round = 0; round < ROUNDS; round++) {
    const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]!);
    for (const variant of order) runs[variant].push(await run(variant));
    const [today, mapped, routed] = VARIANTS.map((variant) => runs[variant].at(-1)!);
    printRow(`${name} round ${round + 1}`, {
      today: formatRate(rate(today!)),
      mapped: formatRate(rate(mapped!)),
      routed: formatRate(rate(routed!)),
      routed_redirects: String(routed!.load.redirects),
      load: loadLine(),
    });
  }
  return runs;
}

/** Medians and ratios against today's: the rate, and CPU per cycle of the client and of lockd. */
function printSummary(name: string, runs: Record<Variant, Run[]>): void {
  const of = (variant: Variant, metric: (run: Run) => number) => median(runs[variant].map(metric));
  const ratio = (variant: Variant, metric: (run: Run) => number) => of(variant, metric) / of("today", metric);
  // Each round's runs are back to back: the median of the rounds' own ratios is steadier.
  const paired = (variant: Variant) =>
    median(runs[variant].map((run, i) => rate(run) / rate(runs.today[i]!)));
  const client = (run: Run) => cpuPerCycleUs(run, "client");
  const lockd = (run: Run) => cpuPerCycleUs(run, "lockd");
  printRow(`${name} (medians)`, {
    today: formatRate(of("today", rate)),
    mapped: formatRate(of("mapped", rate)),
    routed: formatRate(of("routed", rate)),
    mapped_ratio: ratio("mapped", rate),
    routed_ratio: ratio("routed", rate),
    mapped_paired: paired("mapped"),
    routed_paired: paired("routed"),
    target: "ratios >= 0.95",
  });
  printRow(`${name} CPU us/cycle (medians)`, {
    client_today: of("today", client),
    client_routed: of("routed", client),
    client_routed_ratio: ratio("routed", client),
    lockd_today: of("today", lockd),
    lockd_mapped: of("mapped", lockd),
    lockd_mapped_ratio: ratio("mapped", lockd),
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
