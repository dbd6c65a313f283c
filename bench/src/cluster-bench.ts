import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LineClient, LockdCluster } from "@lock/testkit";
import { formatRate, percentile, printRow } from "./report.js";
import { firstJsonLine, freePort, LOCKD_MAIN, runLoad, spawnPinned, startLockd } from "./spawn.js";

/**
 * Cluster benchmark: failover time after kill -9, the graceful-handoff gap, and throughput with two
 * standbys attached. Run: `pnpm bench:cluster` (or `node bench/dist/cluster-bench.js [failover|handoff|throughput]`).
 * Failover and handoff use the default timing (100 ms heartbeats, 500 ms peer timeout).
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const DEFAULT_TIMING = ["--heartbeat-interval", "0.1", "--peer-timeout", "0.5"];

async function startCluster(nodes: number): Promise<LockdCluster> {
  const cluster = await LockdCluster.start({ nodes, args: DEFAULT_TIMING });
  await cluster.nodes[0]!.waitForServing({ since: 0 });
  await Promise.all(
    cluster.nodes.slice(1).map((node) => node.waitForFollowing(cluster.advertised(0), { since: 0 })),
  );
  return cluster;
}

/** Brings node 0 back and waits until it has taken the active role over again. */
async function restartTopNode(cluster: LockdCluster): Promise<void> {
  const since = cluster.nodes[0]!.logs.length;
  const followers = cluster.nodes.slice(1).map((node) => node.logs.length);
  await cluster.restart(0);
  await cluster.nodes[0]!.waitForServing({ since });
  await Promise.all(
    cluster.nodes
      .slice(1)
      .map((node, i) => node.waitForFollowing(cluster.advertised(0), { since: followers[i]! })),
  );
}

/**
 * `measure` once per round on one cluster, bringing node 0 back as the active after each; then the
 * p50/p99/max row. Returns nothing: the row is the result.
 */
async function acrossRestarts(
  label: string,
  nodes: number,
  target: Record<string, string>,
  measure: (cluster: LockdCluster, round: number) => Promise<number>,
): Promise<void> {
  const cluster = await startCluster(nodes);
  const times: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      times.push(await measure(cluster, round));
      await restartTopNode(cluster);
    }
  } finally {
    await cluster.dispose();
  }
  times.sort((a, b) => a - b);
  printRow(label, {
    p50_ms: percentile(times, 50),
    p99_ms: percentile(times, 99),
    max_ms: times.at(-1)!,
    ...target,
  });
}

/** kill -9 → the first try-acquire granted by the new active to a client polling it every 2 ms. */
async function failover(): Promise<void> {
  console.log(
    `\n# failover: kill -9 of the active -> first grant on the new active (3 nodes, ${ROUNDS} kills)`,
  );
  await acrossRestarts("failover", 3, { target_p99_ms: "<= 1000" }, async (cluster, round) => {
    using client = await cluster.connect(1);
    const killed = performance.now();
    await cluster.nodes[0]!.kill("SIGKILL");
    for (let attempt = 0; ; attempt++) {
      const reply = await client.request(`Y failover:${round} 30 r${attempt}`);
      if (reply.startsWith("Y ")) break;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    return performance.now() - killed;
  });
}

/**
 * SIGTERM of the active → the successor's promotion, from the two nodes' log timestamps (the old
 * active logs "stopping" as it begins the handoff). An upper bound on the time with no active.
 */
async function handoff(): Promise<void> {
  console.log(
    `\n# graceful handoff: SIGTERM of the active -> successor active (2 nodes, ${ROUNDS} handoffs)`,
  );
  await acrossRestarts("handoff gap", 2, { target_ms: "<= 50" }, async (cluster) => {
    const old = cluster.nodes[0]!;
    const successor = cluster.nodes[1]!;
    const sinceOld = old.logs.length;
    const since = successor.logs.length;
    await old.stop();
    const promoted = await successor.waitForServing({ since });
    const stopping = old.logs.slice(sinceOld).find((entry) => entry.msg === "stopping")!;
    return (promoted.time as number) - (stopping.time as number);
  });
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

function median(values: number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
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
  const ports = [await freePort(), await freePort(), await freePort()];
  const peers = ports.map((port) => `127.0.0.1:${port}`).join(",");
  // Cluster nodes need a peer token (lockd refuses --peers without one).
  const peerTokenFile = join(mkdtempSync(join(tmpdir(), "lockd-bench-peer-")), "peer-token");
  writeFileSync(peerTokenFile, "bench-peer-token-of-the-cluster\n", { mode: 0o600 });
  const nodes = ports.map((port, i) =>
    spawnPinned(i === 0 ? "0" : standbyCpu, [
      LOCKD_MAIN,
      "--listen",
      `127.0.0.1:${port}`,
      "--data-dir",
      mkdtempSync(join(tmpdir(), "lockd-bench-cluster-")),
      "--peers",
      peers,
      "--peer-token-file",
      peerTokenFile,
    ]),
  );
  try {
    await firstJsonLine(nodes[0]!, (entry) => entry.msg === "role changed" && entry.role === "active");
    await Promise.all(
      nodes.slice(1).map((node) => firstJsonLine(node, (entry) => entry.msg === "following active")),
    );
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
    for (const node of nodes) node.kill("SIGKILL");
  }
}

const only = process.argv[2];
const sections: Record<string, () => Promise<void>> = { failover, handoff, throughput };
console.log(`lockd cluster benchmark  node ${process.version}  ${new Date().toISOString()}`);
for (const [name, run] of Object.entries(sections)) {
  if (only === undefined || only === name) await run();
}
process.exit(0);
