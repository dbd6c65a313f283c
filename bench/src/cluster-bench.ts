import { readFileSync } from "node:fs";
import { LineClient } from "@lock/testkit";
import { failoverTimes, handoffGaps, printTimes, ROUNDS, startPinnedCluster } from "./cluster-timing.js";
import { formatRate, median, printRow } from "./report.js";
import { runLoad, startLockd } from "./spawn.js";

/**
 * Cluster benchmark: failover time after kill -9, the graceful-handoff gap, and throughput with two
 * standbys attached. Run: `pnpm bench:cluster` (or `node bench/dist/cluster-bench.js [failover|handoff|throughput]`).
 * Failover and handoff use the default timing (100 ms heartbeats, 500 ms peer timeout).
 */

/** kill -9 → the first try-acquire granted by the new active to a client polling it every 2 ms. */
async function failover(): Promise<void> {
  console.log(
    `\n# failover: kill -9 of the active -> first grant on the new active (3 nodes, ${ROUNDS} kills)`,
  );
  printTimes("failover", await failoverTimes(), { target_p99_ms: "<= 1000" });
}

/** SIGTERM of the active → the successor's promotion (an upper bound on the time with no active). */
async function handoff(): Promise<void> {
  console.log(
    `\n# graceful handoff: SIGTERM of the active -> successor active (2 nodes, ${ROUNDS} handoffs)`,
  );
  printTimes("handoff gap", await handoffGaps(), { target_ms: "<= 50" });
}

/** CPU seconds (user + system) a process has used so far, from /proc. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  // utime and stime are fields 14 and 15 of stat; after "pid (comm) " they are at 11 and 12.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Runs the load and also reports the server's CPU use: ops per CPU-second of the server process. */
async function measured(
  pid: number,
  run: () => Promise<{ ops: number; seconds: number; p50: number; p99: number }>,
) {
  const before = cpuSeconds(pid);
  const result = await run();
  return { ...result, opsPerCpuSecond: result.ops / (cpuSeconds(pid) - before) };
}

/** The `keys=` count a node reports to `I`. */
async function keyCount(client: LineClient): Promise<number> {
  const info = await client.request("I");
  return Number(/ keys=(\d+)/.exec(info)?.[1] ?? Number.NaN);
}

/** Waits until both standbys hold as many keys as the active (they converge once the load stops). */
async function standbysConverge(clients: LineClient[]): Promise<{ keys: number; ms: number }> {
  const started = performance.now();
  const keys = await keyCount(clients[0]!);
  for (;;) {
    const counts = await Promise.all(clients.slice(1).map(keyCount));
    if (counts.every((count) => count === keys)) return { keys, ms: Math.round(performance.now() - started) };
    if (performance.now() - started > 10_000)
      throw new Error(`standbys hold ${counts} keys, the active ${keys}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * The same load against a single node and against the active of a 3-node cluster, alternating
 * (BENCH_TP_ROUNDS rounds, 5 by default) so that drift on a shared machine hits both alike; the
 * ratio is of the medians. On 2 cores the standbys share a core with the load generator: each
 * standby's CPU use is reported, and the active's ops per CPU-second (its own cost of replicating).
 */
async function throughput(): Promise<void> {
  const standbyCpu = process.env.BENCH_STANDBY_CPU ?? "1";
  // Reused keys (one per in-flight slot) let replication fold a slot's changes into one frame when a
  // standby falls behind; unique keys (BENCH_KEYS=unique) are the case where folding helps least.
  const keys = process.env.BENCH_KEYS === "unique" ? "unique" : "reused";
  console.log(
    `\n# throughput: 1024 in flight over 4 connections, ${keys} keys (server/active cpu 0, load cpu 1, standbys cpu ${standbyCpu})`,
  );
  const load = {
    mode: "cycle" as const,
    connections: 4,
    inflight: 256,
    durationMs: Number(process.env.BENCH_DURATION_MS ?? 3000),
    keys,
  } as const;
  let infoClients: LineClient[] = [];
  const single = await startLockd("0");
  const cluster = await startPinnedCluster(standbyCpu);
  const { ports, nodes } = cluster;
  try {
    // One connection per node for `I`, kept for the convergence checks after each round.
    infoClients = await Promise.all(ports.map((port) => LineClient.connect(port)));
    if (!(await infoClients[0]!.request("I")).includes("role=active"))
      throw new Error("node 0 is not active");

    const rounds = Number(process.env.BENCH_TP_ROUNDS ?? 5);
    const alone: Array<{ rate: number; perCpu: number }> = [];
    const replicated: Array<{ rate: number; perCpu: number; standbyCpu: number }> = [];
    for (let round = 1; round <= rounds; round++) {
      const a = await measured(single.child.pid!, () => runLoad("1", { ...load, port: single.port }));
      const standbyBefore = nodes.slice(1).map((node) => cpuSeconds(node.pid!));
      const c = await measured(nodes[0]!.pid!, () => runLoad("1", { ...load, port: ports[0]! }));
      const standbySeconds = nodes.slice(1).map((node, i) => cpuSeconds(node.pid!) - standbyBefore[i]!);
      const converged = await standbysConverge(infoClients);
      alone.push({ rate: a.ops / a.seconds, perCpu: a.opsPerCpuSecond });
      // CPU share of one standby over the run (its CPU-seconds per wall second of load).
      const share = Math.max(...standbySeconds) / c.seconds;
      replicated.push({ rate: c.ops / c.seconds, perCpu: c.opsPerCpuSecond, standbyCpu: share });
      printRow(`round ${round}`, {
        single: formatRate(a.ops / a.seconds),
        cluster: formatRate(c.ops / c.seconds),
        ratio: c.ops / c.seconds / (a.ops / a.seconds),
        cluster_p99_ms: c.p99,
        standby_cpu: share,
        standbys_converged_ms: converged.ms,
        keys: converged.keys,
      });
    }
    const aloneRate = median(alone.map((r) => r.rate));
    const clusterRate = median(replicated.map((r) => r.rate));
    const alonePerCpu = median(alone.map((r) => r.perCpu));
    const clusterPerCpu = median(replicated.map((r) => r.perCpu));
    printRow("single node (median)", {
      rate: formatRate(aloneRate),
      ops_per_server_cpu_s: Math.round(alonePerCpu),
    });
    printRow("active with 2 standbys (median)", {
      rate: formatRate(clusterRate),
      ops_per_active_cpu_s: Math.round(clusterPerCpu),
    });
    printRow("ratio (cluster / single)", {
      throughput: clusterRate / aloneRate,
      active_cpu_efficiency: clusterPerCpu / alonePerCpu,
      target: ">= 0.7",
    });
  } finally {
    for (const client of infoClients) client.close();
    single.stop();
    cluster.stop();
  }
}

const only = process.argv[2];
const sections: Record<string, () => Promise<void>> = { failover, handoff, throughput };
console.log(`lockd cluster benchmark  node ${process.version}  ${new Date().toISOString()}`);
for (const [name, run] of Object.entries(sections)) {
  if (only === undefined || only === name) await run();
}
process.exit(0);
