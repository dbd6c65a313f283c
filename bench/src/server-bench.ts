import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RequestDecoder } from "@lock/protocol";
import { DEFAULT_SERVER_LIMITS, LockEngine, LockNode, monotonicClock, TokenIssuer } from "@lock/server";
import { lockdMemory } from "./lockd-memory.js";
import { formatRate, percentile, printRow } from "./report.js";
import { runLoad, type Served, startEchoServer, startLockd } from "./spawn.js";

/**
 * Single-node lockd benchmark. Run: `pnpm bench:server` (or `node --expose-gc bench/dist/server-bench.js`).
 *
 * Pinning (2 cores): throughput runs put the server on CPU 0 and the load generator on CPU 1;
 * latency runs put both on CPU 0. The raw Node socket ceiling (bench/src/echo-server.ts) is pinned
 * and loaded exactly like lockd, in the same run, so the ratio is comparable across machines.
 */
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 3000);

async function withServer<T>(start: () => Promise<Served>, run: (port: number) => Promise<T>): Promise<T> {
  const served = await start();
  try {
    return await run(served.port);
  } finally {
    served.stop();
  }
}

async function throughput(): Promise<void> {
  console.log("\n# pipelined uncontended acquire+release cycles (server cpu 0, load cpu 1)");
  // One connection ping-pongs whole batches (each side idles while the other works); the last row
  // spreads the same 1024 in flight over 4 connections, which keeps the server busy.
  const runs = [
    { connections: 1, inflight: 1 },
    { connections: 1, inflight: 16 },
    { connections: 1, inflight: 128 },
    { connections: 1, inflight: 1024 },
    { connections: 4, inflight: 256 },
  ];
  for (const { connections, inflight } of runs) {
    const load = { mode: "cycle" as const, connections, inflight, durationMs: DURATION_MS };
    const echo = await withServer(
      () => startEchoServer("0"),
      (port) => runLoad("1", { ...load, port }),
    );
    const lockd = await withServer(
      () => startLockd("0"),
      (port) => runLoad("1", { ...load, port }),
    );
    const lockdRate = lockd.ops / lockd.seconds;
    const echoRate = echo.ops / echo.seconds;
    printRow(`inflight=${connections * inflight} (${connections} conn)`, {
      lockd: formatRate(lockdRate),
      raw_node_ceiling: formatRate(echoRate),
      ratio: lockdRate / echoRate,
      lockd_p50_ms: lockd.p50,
      lockd_p99_ms: lockd.p99,
    });
  }
}

async function latency(): Promise<void> {
  console.log("\n# sequential latency, 1 in flight (server and load both on cpu 0)");
  const load = { mode: "cycle" as const, connections: 1, inflight: 1, durationMs: DURATION_MS };
  const echo = await withServer(
    () => startEchoServer("0"),
    (port) => runLoad("0", { ...load, port }),
  );
  const lockd = await withServer(
    () => startLockd("0"),
    (port) => runLoad("0", { ...load, port }),
  );
  printRow("acquire round trip", {
    lockd_p50_ms: lockd.p50,
    lockd_p99_ms: lockd.p99,
    raw_node_p50_ms: echo.p50,
    raw_node_p99_ms: echo.p99,
    p50_ratio: lockd.p50 / echo.p50,
  });
}

async function contended(): Promise<void> {
  console.log("\n# 64 waiters on one key: each grant is a direct handoff (server cpu 0, load cpu 1)");
  const lockd = await withServer(
    () => startLockd("0"),
    (port) => runLoad("1", { port, mode: "contend", connections: 64, inflight: 1, durationMs: DURATION_MS }),
  );
  printRow("handoffs", {
    rate: formatRate(lockd.ops / lockd.seconds),
    wait_p50_ms: lockd.p50,
    wait_p99_ms: lockd.p99,
  });
}

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (!collect) throw new Error("run with node --expose-gc");
  collect();
  collect();
}

function memory(): void {
  console.log("\n# memory, in this process (decoder + engine; node --expose-gc)");
  let epoch = 1n;
  const newEngine = () =>
    new LockEngine<null>({
      clock: monotonicClock,
      tokens: new TokenIssuer(epoch, () => ++epoch),
      events: { granted() {}, timedOut() {} },
      limits: { maxKeys: 2_000_000, maxWaitersPerKey: 2_000_000 },
    });
  const keys = 1_000_000;
  // Keys come from the decoder, as in lockd, so the figure includes the key strings as held.
  const decoder = new RequestDecoder();
  const lines = (from: number, count: number) =>
    Buffer.from(Array.from({ length: count }, (_, i) => `A jobs:${from + i} 600 0\n`).join(""));
  gc();
  const before = process.memoryUsage();
  const engine = newEngine();
  const session = engine.openSession();
  for (let from = 0; from < keys; from += 2000) {
    for (const frame of decoder.push(lines(from, 2000))) {
      if ("op" in frame && frame.op === "A")
        engine.acquire(session, { key: frame.key, leaseMs: 600_000, waitMs: 0, payload: null });
    }
  }
  gc();
  const after = process.memoryUsage();
  printRow(`held locks (${keys.toLocaleString("en-US")})`, {
    rss_bytes_per_lock: (after.rss - before.rss) / keys,
    heap_bytes_per_lock: (after.heapUsed - before.heapUsed) / keys,
    target_rss: "<= 256",
  });
  const keyNames = Array.from({ length: 1000 }, (_, i) => `jobs:${i}`);

  const waiters = 200_000;
  const queueEngine = newEngine();
  const queueSession = queueEngine.openSession();
  for (let i = 0; i < 1000; i++)
    queueEngine.acquire(queueSession, { key: keyNames[i]!, leaseMs: 600_000, waitMs: 0, payload: null });
  gc();
  const beforeWaiters = process.memoryUsage();
  for (let i = 0; i < waiters; i++) {
    queueEngine.acquire(queueSession, {
      key: keyNames[i % 1000]!,
      leaseMs: 600_000,
      waitMs: 60_000,
      payload: null,
    });
  }
  gc();
  const afterWaiters = process.memoryUsage();
  printRow(`queued waiters (${waiters.toLocaleString("en-US")})`, {
    rss_bytes_per_waiter: (afterWaiters.rss - beforeWaiters.rss) / waiters,
    heap_bytes_per_waiter: (afterWaiters.heapUsed - beforeWaiters.heapUsed) / waiters,
  });
  // Keep both engines alive until measured.
  if (engine.keyCount + queueEngine.waiterCount === 0) console.log("unreachable");
}

async function expiryLateness(): Promise<void> {
  console.log("\n# expiry lateness: 100k leases expiring over 1 s, one timer (this process, unpinned)");
  const leases = 100_000;
  const dataDir = mkdtempSync(join(tmpdir(), "lockd-bench-expiry-"));
  const deadlines = new Map<string, number>();
  const lateness: number[] = [];
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  const node = new LockNode({
    dataDir,
    limits: DEFAULT_SERVER_LIMITS,
    advertise: "bench",
    journal: {
      grant() {},
      extend() {},
      free(key, _token, cause) {
        if (cause !== "expiry") return;
        lateness.push(performance.now() - deadlines.get(key)!);
        if (lateness.length === leases) done();
      },
    },
  });
  const session = node.openSession();
  for (let i = 0; i < leases; i++) {
    const leaseMs = 1000 + (i % 1000);
    const key = `lease:${i}`;
    deadlines.set(key, performance.now() + leaseMs);
    node.acquire(session, {
      key,
      leaseMs,
      waitMs: 0,
      payload: { granted() {}, timedOut() {}, refused() {} },
    });
  }
  node.afterRequests();
  await finished;
  node.close();
  rmSync(dataDir, { recursive: true, force: true });
  lateness.sort((a, b) => a - b);
  printRow("lease expiry lateness", {
    p50_ms: percentile(lateness, 50),
    p99_ms: percentile(lateness, 99),
    max_ms: lateness.at(-1)!,
  });
}

const only = process.argv[2];
const sections: Record<string, () => unknown> = {
  throughput,
  latency,
  contended,
  memory,
  "lockd-memory": lockdMemory,
  expiry: expiryLateness,
};
console.log(
  `lockd server benchmark  node ${process.version}  ${new Date().toISOString()}  duration ${DURATION_MS} ms/run`,
);
for (const [name, run] of Object.entries(sections)) {
  if (only === undefined || only === name) await run();
}
