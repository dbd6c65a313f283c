import { type CycleLoad, runCycleLoad } from "./client-load.js";
import { percentile, printRow } from "./report.js";
import { runLoad, startLockd, startRedis } from "./spawn.js";

/**
 * @lock/client against the baseline a Node user would otherwise pick: ioredis against Redis, with the
 * usual lock recipe (`SET key value NX PX lease` to acquire, a compare-and-delete Lua script to
 * release). Same run, same machine, both servers pinned alike; the client load runs in its own pinned
 * process (bench/src/client-load-worker.ts, through client-load.ts).
 *
 *   pnpm exec tsc -b && node bench/dist/client-bench.js [throughput|latency]
 *
 * Pinning (2 cores): throughput runs put the server (lockd, or a dedicated redis-server started here
 * on a free port with persistence off) on CPU 0 and the client process on CPU 1; latency runs put
 * both on CPU 0. Each figure is the median of ROUNDS runs, lockd and Redis alternating so that drift
 * on a shared machine hits both alike.
 *
 * Targets: pipelined throughput at 1024 in flight ≥ 2× ioredis/Redis; sequential p50 ≤ ioredis/Redis.
 */
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const THROUGHPUT_TARGET = 2;

type Target = "lockd" | "redis";

async function run(
  target: Target,
  serverCpu: string,
  clientCpu: string,
  inflight: number,
): Promise<CycleLoad> {
  const served = target === "lockd" ? await startLockd(serverCpu) : await startRedis(serverCpu);
  try {
    return await runCycleLoad(clientCpu, {
      target: { system: target, port: served.port, connections: 1 },
      inflight,
      durationMs: DURATION_MS,
    });
  } finally {
    served.stop();
  }
}

/** ROUNDS runs of each target, alternating; per target, the median of each field. */
async function measure(
  serverCpu: string,
  clientCpu: string,
  inflight: number,
): Promise<Record<Target, CycleLoad>> {
  const runs: Record<Target, CycleLoad[]> = { lockd: [], redis: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const target of ["lockd", "redis"] as const)
      runs[target].push(await run(target, serverCpu, clientCpu, inflight));
  }
  const median = (loads: CycleLoad[], field: keyof CycleLoad) =>
    percentile(
      loads.map((load) => (field === "ops" ? load.ops / load.seconds : load[field])).sort((a, b) => a - b),
      50,
    );
  const summarize = (loads: CycleLoad[]): CycleLoad => ({
    ops: median(loads, "ops"),
    seconds: 1,
    acquireP50: median(loads, "acquireP50"),
    acquireP99: median(loads, "acquireP99"),
    cycleP50: median(loads, "cycleP50"),
    cycleP99: median(loads, "cycleP99"),
    samples: loads.reduce((sum, load) => sum + load.samples, 0),
  });
  return { lockd: summarize(runs.lockd), redis: summarize(runs.redis) };
}

async function throughput(): Promise<void> {
  console.log("\n# pipelined uncontended acquire+release cycles (server cpu 0, client process cpu 1)");
  for (const inflight of [1024]) {
    const { lockd, redis } = await measure("0", "1", inflight);
    const ratio = lockd.ops / redis.ops;
    printRow(`inflight=${inflight}`, {
      lock_client: `${Math.round(lockd.ops).toLocaleString("en-US")}/s`,
      ioredis: `${Math.round(redis.ops).toLocaleString("en-US")}/s`,
      ratio,
      target:
        ratio >= THROUGHPUT_TARGET ? `met (>= ${THROUGHPUT_TARGET})` : `MISSED (< ${THROUGHPUT_TARGET})`,
      lock_client_cycle_p50_ms: lockd.cycleP50,
      ioredis_cycle_p50_ms: redis.cycleP50,
    });
  }
}

/**
 * The server's share of the latency: bench/src/load-worker.ts, a raw-socket client that does nothing
 * but write lines and split replies, against lockd pinned the same way. No client library can beat it.
 */
async function rawLockdAcquireP50(): Promise<number> {
  const p50s: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const served = await startLockd("0");
    try {
      const load = {
        port: served.port,
        mode: "cycle" as const,
        connections: 1,
        inflight: 1,
        durationMs: DURATION_MS,
      };
      p50s.push((await runLoad("0", load)).p50);
    } finally {
      served.stop();
    }
  }
  return percentile(
    p50s.sort((a, b) => a - b),
    50,
  );
}

async function latency(): Promise<void> {
  console.log("\n# sequential, 1 in flight (server and client process both on cpu 0)");
  const { lockd, redis } = await measure("0", "0", 1);
  const rawP50 = await rawLockdAcquireP50();
  const ratio = lockd.cycleP50 / redis.cycleP50;
  printRow("acquire+release cycle", {
    lock_client_p50_ms: lockd.cycleP50,
    lock_client_p99_ms: lockd.cycleP99,
    ioredis_p50_ms: redis.cycleP50,
    ioredis_p99_ms: redis.cycleP99,
    p50_ratio: ratio,
    target: ratio <= 1 ? "met (<= 1)" : "MISSED (> 1)",
  });
  printRow("acquire alone", {
    lock_client_p50_ms: lockd.acquireP50,
    lock_client_p99_ms: lockd.acquireP99,
    ioredis_p50_ms: redis.acquireP50,
    ioredis_p99_ms: redis.acquireP99,
    p50_ratio: lockd.acquireP50 / redis.acquireP50,
  });
  printRow("acquire, raw socket client to lockd", {
    p50_ms: rawP50,
    lock_client_overhead_ms: lockd.acquireP50 - rawP50,
    raw_vs_ioredis_p50_ratio: rawP50 / redis.acquireP50,
  });
}

const only = process.argv[2];
const sections: Record<string, () => Promise<void>> = { throughput, latency };
console.log(
  `@lock/client vs ioredis/Redis  node ${process.version}  ${new Date().toISOString()}  ` +
    `${DURATION_MS} ms/run, median of ${ROUNDS} alternating runs`,
);
for (const [name, section] of Object.entries(sections)) {
  if (only === undefined || only === name) await section();
}
