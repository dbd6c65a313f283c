import type { ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LockdCluster } from "@lock/testkit";
import { percentile, printRow } from "./report.js";
import { firstJsonLine, freePort, LOCKD_MAIN, spawnPinned } from "./spawn.js";

/**
 * What the cluster benches measure on a real LockdCluster (cluster-bench.ts, and
 * coordinator-bench.ts with `--coordinator` flags): kill -9 failover time and the graceful-handoff
 * gap, over rounds that bring node 0 back as the active after each; and a pinned 3-node cluster for
 * throughput. `args` are extra lockd flags for every node.
 */
export const DEFAULT_TIMING = ["--heartbeat-interval", "0.1", "--peer-timeout", "0.5"];
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);

async function startCluster(nodes: number, args: readonly string[]): Promise<LockdCluster> {
  const cluster = await LockdCluster.start({ nodes, args: [...DEFAULT_TIMING, ...args] });
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

/** `measure` once per round on one cluster, bringing node 0 back as the active after each; sorted. */
async function acrossRestarts(
  nodes: number,
  args: readonly string[],
  measure: (cluster: LockdCluster, round: number) => Promise<number>,
): Promise<number[]> {
  const cluster = await startCluster(nodes, args);
  const times: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      times.push(await measure(cluster, round));
      await restartTopNode(cluster);
    }
  } finally {
    await cluster.dispose();
  }
  return times.sort((a, b) => a - b);
}

/** The p50/p99/max row of sorted times, with the target. */
export function printTimes(label: string, sorted: readonly number[], target: Record<string, string>): void {
  printRow(label, {
    p50_ms: percentile(sorted, 50),
    p99_ms: percentile(sorted, 99),
    max_ms: sorted.at(-1)!,
    ...target,
  });
}

/** kill -9 of the active → the first try-acquire granted by the new active (3 nodes, polled every 2 ms). */
export function failoverTimes(args: readonly string[] = []): Promise<number[]> {
  return acrossRestarts(3, args, async (cluster, round) => {
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
export function handoffGaps(args: readonly string[] = []): Promise<number[]> {
  return acrossRestarts(2, args, async (cluster) => {
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

export interface PinnedCluster {
  readonly ports: readonly number[];
  readonly nodes: readonly ChildProcess[];
  stop(): void;
}

/**
 * A 3-node cluster of lockd processes at lockd's default timing, the active (node 0) pinned to cpu 0
 * and the standbys to `standbyCpu`; resolves once node 0 is active and both standbys follow it.
 */
export async function startPinnedCluster(
  standbyCpu: string,
  args: readonly string[] = [],
): Promise<PinnedCluster> {
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
      ...args,
    ]),
  );
  const stop = () => {
    for (const node of nodes) node.kill("SIGKILL");
  };
  try {
    await firstJsonLine(nodes[0]!, (entry) => entry.msg === "role changed" && entry.role === "active");
    await Promise.all(
      nodes.slice(1).map((node) => firstJsonLine(node, (entry) => entry.msg === "following active")),
    );
  } catch (error) {
    stop();
    throw error;
  }
  return { ports, nodes, stop };
}
