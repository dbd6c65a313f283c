import type { EtcdCluster } from "@lock/testkit";
import { formatRate, loadLine, median, printRow } from "./report.js";
import {
  allSlotsTo,
  type ClusterSpec,
  cpuMsOf,
  type Deployment,
  halves,
  startDeployment,
} from "./slot-clusters.js";
import { runSlotsLoad, type SlotsLoad } from "./slots-workers.js";

/**
 * `pnpm bench:slots scale`: two one-node clusters pinned one per core (east cpu 0, west cpu 1,
 * halves of the slot map) against one one-node cluster on cpu 0 that has every slot, under the
 * same load, in alternating rounds (issue #24: "throughput ratio reported with the load
 * generator's share stated").
 *
 * The load: two processes, one pinned to each core in both deployments, each with one LockClient
 * running BENCH_INFLIGHT (default 512) acquire+release loops on keys of its own spread over all
 * slots; the client is given the first cluster's address and routes by the slot map. The load
 * generator cannot have cores of its own on 2 cores: it shares them with lockd, so each row states
 * its CPU time and lockd's as shares of the machine's 2 cores (1.0 = both cores busy all along).
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 3000);
const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 512);
const LOAD_CPUS = ["0", "1"];
const CORES = 2;

const DEPLOYMENTS = {
  one: { specs: [{ name: "solo", cpu: "0" }], ranges: allSlotsTo("solo") },
  two: {
    specs: [
      { name: "east", cpu: "0" },
      { name: "west", cpu: "1" },
    ],
    ranges: halves("east", "west"),
  },
} satisfies Record<string, { specs: ClusterSpec[]; ranges: unknown }>;
type Shape = keyof typeof DEPLOYMENTS;

interface Round {
  readonly rate: number;
  /** CPU time over the run as a share of the machine's cores: the load processes', and lockd's. */
  readonly loadShare: number;
  readonly lockdShare: number;
}

/** The same load from each load process at once; their summed rate and the CPU shares. */
async function measure(deployment: Deployment): Promise<Round> {
  const nodes = deployment.clusters.map((cluster) => cluster.child.pid!);
  const lockdCpu = () => nodes.reduce((sum, pid) => sum + cpuMsOf(pid), 0);
  const before = lockdCpu();
  const server = deployment.clusters[0]!.address;
  const loads: SlotsLoad[] = await Promise.all(
    LOAD_CPUS.map((cpu, i) =>
      runSlotsLoad(cpu, { server, inflight: INFLIGHT, durationMs: DURATION_MS, keyPrefix: `l${i}:` }),
    ),
  );
  const wallMs = Math.max(...loads.map((load) => load.wallMs));
  return {
    rate: loads.reduce((sum, load) => sum + load.ops / load.seconds, 0),
    loadShare: loads.reduce((sum, load) => sum + load.cpuMs, 0) / (wallMs * CORES),
    lockdShare: (lockdCpu() - before) / (wallMs * CORES),
  };
}

function printRound(name: string, rounds: Record<Shape, Round[]>, pick: (runs: Round[]) => Round): void {
  const [one, two] = [pick(rounds.one), pick(rounds.two)];
  printRow(name, {
    one: formatRate(one.rate),
    two: formatRate(two.rate),
    ratio: two.rate / one.rate,
    load_cpu_one: one.loadShare,
    load_cpu_two: two.loadShare,
    lockd_cpu_one: one.lockdShare,
    lockd_cpu_two: two.lockdShare,
    load: loadLine(),
  });
}

export async function scaleSection(etcd: EtcdCluster): Promise<void> {
  console.log(
    `\n# scale: two one-node clusters (cpu 0, cpu 1; halves of the slots) vs one (cpu 0, all slots), ${ROUNDS} alternating rounds of ${DURATION_MS} ms;` +
      ` load: 2 processes (cpu 0, cpu 1) x 1 LockClient x ${INFLIGHT} in flight; CPU shares of 2 cores; etcd cpu 1`,
  );
  const deployments = new Map<Shape, Deployment>();
  try {
    for (const [shape, { specs, ranges }] of Object.entries(DEPLOYMENTS))
      deployments.set(shape as Shape, await startDeployment(etcd, specs, ranges));
    const rounds: Record<Shape, Round[]> = { one: [], two: [] };
    // One unmeasured run each first: the long-lived lockd processes warm up (JIT, tables) over
    // their first runs; without it the rates rose by half over five rounds.
    for (const deployment of deployments.values()) await measure(deployment);
    for (let round = 0; round < ROUNDS; round++) {
      const order: Shape[] = round % 2 === 0 ? ["one", "two"] : ["two", "one"];
      for (const shape of order) rounds[shape].push(await measure(deployments.get(shape)!));
      printRound(`round ${round + 1}`, rounds, (runs) => runs.at(-1)!);
    }
    const medianOf = (runs: Round[]): Round => ({
      rate: median(runs.map((run) => run.rate)),
      loadShare: median(runs.map((run) => run.loadShare)),
      lockdShare: median(runs.map((run) => run.lockdShare)),
    });
    printRound("medians", rounds, medianOf);
    // CPU µs per cycle: what the ratio is made of. The load generator's cost per cycle, several times
    // lockd's, bounds both deployments' throughput on 2 cores.
    const perCycle = (run: Round, share: number) => (share * CORES * 1e6) / run.rate;
    const [one, two] = [medianOf(rounds.one), medianOf(rounds.two)];
    printRow("  paired ratio, CPU us/cycle", {
      paired_ratio: median(rounds.two.map((run, i) => run.rate / rounds.one[i]!.rate)),
      load_one: perCycle(one, one.loadShare),
      load_two: perCycle(two, two.loadShare),
      lockd_one: perCycle(one, one.lockdShare),
      lockd_two: perCycle(two, two.lockdShare),
    });
  } finally {
    for (const deployment of deployments.values()) deployment.stop();
  }
}
