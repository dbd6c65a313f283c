import { mkdtempSync, readFileSync } from "node:fs";
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
  await cluster.nodes[0]!.waitForRole("active", { since: 0 });
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
  await cluster.nodes[0]!.waitForRole("active", { since });
  await Promise.all(
    cluster.nodes
      .slice(1)
      .map((node, i) => node.waitForFollowing(cluster.advertised(0), { since: followers[i]! })),
  );
}

/** kill -9 → the first try-acquire granted by the new active to a client polling it every 2 ms. */
async function failover(): Promise<void> {
  console.log(
    `\n# failover: kill -9 of the active -> first grant on the new active (3 nodes, ${ROUNDS} kills)`,
  );
  const cluster = await startCluster(3);
  const times: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      using client = await cluster.connect(1);
      const killed = performance.now();
      await cluster.nodes[0]!.kill("SIGKILL");
      for (let attempt = 0; ; attempt++) {
        const reply = await client.request(`Y failover:${round} 30 r${attempt}`);
        if (reply.startsWith("Y ")) break;
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      times.push(performance.now() - killed);
      await restartTopNode(cluster);
    }
  } finally {
    await cluster.dispose();
  }
  times.sort((a, b) => a - b);
  printRow("failover", {
    p50_ms: percentile(times, 50),
    p99_ms: percentile(times, 99),
    max_ms: times.at(-1)!,
    target_p99_ms: "<= 1000",
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
  const cluster = await startCluster(2);
  const gaps: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const old = cluster.nodes[0]!;
      const successor = cluster.nodes[1]!;
      const sinceOld = old.logs.length;
      const since = successor.logs.length;
      await old.stop();
      const promoted = await successor.waitForRole("active", { since });
      const stopping = old.logs.slice(sinceOld).find((entry) => entry.msg === "stopping")!;
      gaps.push((promoted.time as number) - (stopping.time as number));
      await restartTopNode(cluster);
    }
  } finally {
    await cluster.dispose();
  }
  gaps.sort((a, b) => a - b);
  printRow("handoff gap", {
    p50_ms: percentile(gaps, 50),
    p99_ms: percentile(gaps, 99),
    max_ms: gaps.at(-1)!,
    target_ms: "<= 50",
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

/**
 * The same load against a single node and against the active of a 3-node cluster. On 2 cores the
 * standbys share a core with the load generator, so the throughput ratio understates what dedicated
 * machines would see; the active's ops per CPU-second (its own cost of replicating) is the fairer ratio.
 */
async function throughput(): Promise<void> {
  console.log(
    `\n# throughput: 1024 in flight over 4 connections (server/active cpu 0, load cpu 1, standbys cpu ${process.env.BENCH_STANDBY_CPU ?? "1"})`,
  );
  const load = {
    mode: "cycle" as const,
    connections: 4,
    inflight: 256,
    durationMs: Number(process.env.BENCH_DURATION_MS ?? 3000),
  };
  const single = await startLockd("0");
  const alone = await measured(single.child.pid!, () => runLoad("1", { ...load, port: single.port }));
  single.stop();

  const ports = [await freePort(), await freePort(), await freePort()];
  const peers = ports.map((port) => `127.0.0.1:${port}`).join(",");
  const nodes = ports.map((port, i) =>
    spawnPinned(
      process.env.BENCH_STANDBY_CPU && i > 0 ? process.env.BENCH_STANDBY_CPU : i === 0 ? "0" : "1",
      [
        LOCKD_MAIN,
        "--listen",
        `127.0.0.1:${port}`,
        "--data-dir",
        mkdtempSync(join(tmpdir(), "lockd-bench-cluster-")),
        "--peers",
        peers,
      ],
    ),
  );
  try {
    await firstJsonLine(nodes[0]!, (entry) => entry.msg === "role changed" && entry.role === "active");
    await Promise.all(
      nodes.slice(1).map((node) => firstJsonLine(node, (entry) => entry.msg === "following active")),
    );
    using check = await LineClient.connect(ports[0]!);
    if (!(await check.request("I")).includes("role=active")) throw new Error("node 0 is not active");
    const replicated = await measured(nodes[0]!.pid!, () => runLoad("1", { ...load, port: ports[0]! }));
    const aloneRate = alone.ops / alone.seconds;
    const clusterRate = replicated.ops / replicated.seconds;
    printRow("single node", {
      rate: formatRate(aloneRate),
      ops_per_server_cpu_s: Math.round(alone.opsPerCpuSecond),
      p50_ms: alone.p50,
      p99_ms: alone.p99,
    });
    printRow("active with 2 standbys", {
      rate: formatRate(clusterRate),
      ops_per_active_cpu_s: Math.round(replicated.opsPerCpuSecond),
      p50_ms: replicated.p50,
      p99_ms: replicated.p99,
    });
    printRow("ratio (cluster / single)", {
      throughput: clusterRate / aloneRate,
      active_cpu_efficiency: replicated.opsPerCpuSecond / alone.opsPerCpuSecond,
      target: ">= 0.7",
    });
  } finally {
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
