import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { EtcdCluster } from "@lock/testkit";
import { failoverTimes, handoffGaps, printTimes, ROUNDS, startPinnedCluster } from "./cluster-timing.js";
import { formatRate, loadLine, median, printRow } from "./report.js";
import { type LoadResult, runLoad } from "./spawn.js";

/**
 * A coordinated cluster (`--coordinator`, a 3-member etcd started for the run) against the same
 * cluster without one, side by side. Run: `pnpm bench:coordinator [throughput|failover|handoff]`.
 *
 * - throughput: two 3-node clusters running at once, one coordinated, the same load against each
 *   active in alternating rounds (BENCH_TP_ROUNDS, default 5): sequential (1 connection, 1 in flight)
 *   and pipelined (4 connections × 256 in flight); the ratio of the medians (target: within 3 %: the
 *   store is off the data path).
 * - failover: kill -9 of the coordinated active → the first grant on the new active, default lease
 *   (2 s), BENCH_ROUNDS kills (default 20); target p99 ≤ lease + 0.5 s.
 * - handoff: SIGTERM of the active → the successor serving, with and without a coordinator; target
 *   p99 ≤ 50 ms.
 *
 * Pinning: both actives on cpu 0, the standbys, the load process and the etcd members on cpu 1.
 */
const LEASE_S = 2;

const etcd = await EtcdCluster.start({ members: 3 });
for (const member of etcd.members)
  execFileSync("taskset", ["-pc", "1", String(member.child.pid)], { stdio: "ignore" });

/** `--coordinator` flags for a cluster of its own (its own etcd prefix), default lease. */
function coordinated(): string[] {
  const prefix = `lock-bench-${randomBytes(4).toString("hex")}`;
  const url = `etcd://${etcd.endpoints.join(",")}/${prefix}/`;
  return ["--coordinator", url, "--cluster-name", "bench", "--coordinator-lease", String(LEASE_S)];
}

async function throughput(): Promise<void> {
  const rounds = Number(process.env.BENCH_TP_ROUNDS ?? 5);
  const durationMs = Number(process.env.BENCH_DURATION_MS ?? 3000);
  console.log(
    `\n# throughput: 3-node cluster with a coordinator (etcd) against without, ${rounds} alternating rounds of ${durationMs} ms` +
      ` (actives cpu 0; standbys, load, etcd cpu 1)`,
  );
  const loads = {
    sequential: { mode: "cycle", connections: 1, inflight: 1, durationMs },
    pipelined: { mode: "cycle", connections: 4, inflight: 256, durationMs },
  } as const;
  const plain = await startPinnedCluster("1");
  const withStore = await startPinnedCluster("1", coordinated()).catch((error) => {
    plain.stop();
    throw error;
  });
  try {
    for (const [name, load] of Object.entries(loads)) {
      const results: Record<"plain" | "coordinated", LoadResult[]> = { plain: [], coordinated: [] };
      // The active's own CPU time per cycle: what the store could add to the data path, without the
      // machine's drift that moves throughput from round to round.
      const cpuPerOp: Record<"plain" | "coordinated", number[]> = { plain: [], coordinated: [] };
      for (let round = 1; round <= rounds; round++) {
        // Alternating which goes first, so drift on a shared machine hits both alike.
        const order =
          round % 2 === 1 ? (["plain", "coordinated"] as const) : (["coordinated", "plain"] as const);
        for (const which of order) {
          const cluster = which === "plain" ? plain : withStore;
          const cpuBefore = cpuNs(cluster.nodes[0]!.pid!);
          const result = await runLoad("1", { ...load, port: cluster.ports[0]! });
          results[which].push(result);
          cpuPerOp[which].push((cpuNs(cluster.nodes[0]!.pid!) - cpuBefore) / 1000 / result.ops);
        }
        const [p, c] = [results.plain.at(-1)!, results.coordinated.at(-1)!];
        printRow(`${name} round ${round}`, {
          without: formatRate(p.ops / p.seconds),
          with: formatRate(c.ops / c.seconds),
          ratio: c.ops / c.seconds / (p.ops / p.seconds),
          active_cpu_us_without: cpuPerOp.plain.at(-1)!,
          active_cpu_us_with: cpuPerOp.coordinated.at(-1)!,
          p50_ms_without: p.p50,
          p50_ms_with: c.p50,
          load: loadLine(),
        });
      }
      const rate = (which: "plain" | "coordinated") => median(results[which].map((r) => r.ops / r.seconds));
      const p50 = (which: "plain" | "coordinated") => median(results[which].map((r) => r.p50));
      // Each round's two runs are back to back, so the machine's drift hits both alike: the median
      // of the rounds' own ratios is the steadier estimate on a shared machine.
      const paired = median(
        results.plain.map((p, i) => {
          const c = results.coordinated[i]!;
          return c.ops / c.seconds / (p.ops / p.seconds);
        }),
      );
      printRow(`${name} (medians)`, {
        without: formatRate(rate("plain")),
        with: formatRate(rate("coordinated")),
        ratio: rate("coordinated") / rate("plain"),
        paired_ratio: paired,
        active_cpu_ratio: median(cpuPerOp.coordinated) / median(cpuPerOp.plain),
        p50_ratio: p50("coordinated") / p50("plain"),
        target: "ratio within 3 %",
      });
    }
  } finally {
    plain.stop();
    withStore.stop();
  }
}

/** CPU time a process has run, in ns (/proc/<pid>/schedstat, Linux). */
function cpuNs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);
}

async function failover(): Promise<void> {
  console.log(
    `\n# failover with a coordinator: kill -9 of the active -> first grant on the new active (3 nodes, lease ${LEASE_S} s, ${ROUNDS} kills; load ${loadLine()})`,
  );
  const times = await failoverTimes(coordinated());
  printTimes("failover, coordinated", times, { target_p99_ms: `<= ${LEASE_S * 1000 + 500}` });
  // The spread comes from the store: the lease expires there up to a lease after the last renewal,
  // and etcd's lessor deletes expired leases' keys every 500 ms.
  printRow("  every failover (ms, sorted)", { all: times.map((ms) => Math.round(ms)).join(" ") });
}

async function handoff(): Promise<void> {
  console.log(
    `\n# graceful handoff: SIGTERM of the active -> successor serving (2 nodes, ${ROUNDS} handoffs each; load ${loadLine()})`,
  );
  printTimes("handoff gap, without", await handoffGaps(), { target_p99_ms: "<= 50" });
  printTimes("handoff gap, coordinated", await handoffGaps(coordinated()), { target_p99_ms: "<= 50" });
}

const only = process.argv[2];
const sections: Record<string, () => Promise<void>> = { throughput, failover, handoff };
console.log(
  `lockd coordinator benchmark  node ${process.version}  ${new Date().toISOString()}  load ${loadLine()}`,
);
try {
  for (const [name, run] of Object.entries(sections)) {
    if (only === undefined || only === name) await run();
  }
} finally {
  await etcd.dispose();
}
process.exit(0);
