import { readFileSync } from "node:fs";
import { join } from "node:path";
import { runCycleLoad } from "./client-load.js";
import { lockdMemory, MEMORY_KEYS } from "./lockd-memory.js";
import { loadLine, percentile, printRow } from "./report.js";
import { LOCKD_MAIN, runLoad, startLockd } from "./spawn.js";

/**
 * Exclusive locks, this build against another build (issue 22: lock modes must not slow down or
 * grow the exclusive lock), side by side in one run:
 *
 *   BENCH_BASELINE_ROOT=/path/to/other/checkout pnpm bench:builds [throughput|latency|client|memory]
 *
 * The other checkout must be built (`pnpm install && pnpm build` there): its
 * apps/lockd/dist/main.js and packages/client/dist/index.js are run with this bench's load.
 *
 * - `throughput`: the raw-socket load (bench/src/load-worker.ts, no client library) against each
 *   build's lockd: pipelined acquire+release cycles (1024 in flight on one connection, and on 4),
 *   and 64 waiters on one key (every grant a handoff), with lockd's CPU time per op (steadier than
 *   the rate on a shared machine). Server cpu 0, load cpu 1.
 * - `latency`: the same load, one request in flight: acquire round trip p50. Both on cpu 0.
 * - `client`: each build's `@lock/client` against its own lockd: 1024 in flight (server cpu 0,
 *   client cpu 1) and sequential acquire+release p50 (both on cpu 0). With BENCH_CLIENT_SERVER=this,
 *   both clients talk to this build's lockd, so the figure is the clients' alone (issue #24: the
 *   slot-aware client against a one-cluster deployment, within 5 % of the client before it).
 * - `memory`: RSS per held exclusive lock at 1M locks (bench/src/lockd-memory.ts; BENCH_MEMORY_KEYS),
 *   lockd on cpu 0.
 *
 * Each figure comes from BENCH_ROUNDS pairs of runs (BENCH_MEMORY_ROUNDS for memory), the order
 * within a pair alternating; the ratio is this build / the other, the median of the pairs' ratios
 * (a pair shares the machine's state of the moment). Targets: within 3 % of the other build
 * (throughput ratio ≥ 0.97, latency ratio ≤ 1.03), memory ≤ 340 B per lock. The engine alone,
 * without sockets, is compared by `pnpm bench:engine-fill cycles` (BENCH_BASELINE_MODULE).
 */
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const MEMORY_ROUNDS = Number(process.env.BENCH_MEMORY_ROUNDS ?? 2);
const TOLERANCE = 0.03;
const MEMORY_TARGET = 340;
const baselineRoot = process.env.BENCH_BASELINE_ROOT;
if (baselineRoot === undefined) {
  console.error("set BENCH_BASELINE_ROOT to a built checkout of the other build (e.g. a worktree of main)");
  process.exit(2);
}

interface Build {
  readonly name: "this" | "baseline";
  readonly main: string;
  /** Its @lock/client; undefined: this bench's own. */
  readonly client: string | undefined;
}

const BUILDS: readonly Build[] = [
  { name: "this", main: LOCKD_MAIN, client: undefined },
  {
    name: "baseline",
    main: join(baselineRoot, "apps", "lockd", "dist", "main.js"),
    client: join(baselineRoot, "packages", "client", "dist", "index.js"),
  },
];

const median = (values: readonly number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

/** One figure a measurement yields, and what its ratio (this / baseline) must be. */
interface Figure {
  readonly label: string;
  readonly unit: string;
  readonly target: (ratio: number) => boolean;
}

/**
 * `rounds` pairs of `measure` (each build once, the order alternating), then one summary row per
 * figure: each build's median and the median of the pairs' ratios (this / baseline).
 */
async function compare<Name extends string>(
  figures: Record<Name, Figure>,
  measure: (build: Build) => Promise<Record<Name, number>>,
  rounds = ROUNDS,
): Promise<Record<Name, { ours: number; theirs: number }>> {
  const names = Object.keys(figures) as Name[];
  const pairs = names.map(() => ({ ours: [] as number[], theirs: [] as number[], ratios: [] as number[] }));
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? BUILDS : [...BUILDS].reverse();
    const measured = new Map<Build["name"], Record<Name, number>>();
    for (const build of order) measured.set(build.name, await measure(build));
    names.forEach((name, i) => {
      const [ours, theirs] = [measured.get("this")![name], measured.get("baseline")![name]];
      pairs[i]!.ours.push(ours);
      pairs[i]!.theirs.push(theirs);
      pairs[i]!.ratios.push(ours / theirs);
      printRow(`  ${figures[name].label} round ${round + 1}`, {
        this: ours,
        baseline: theirs,
        ratio: ours / theirs,
        load: loadLine(),
      });
    });
  }
  const result = {} as Record<Name, { ours: number; theirs: number }>;
  names.forEach((name, i) => {
    const { ours, theirs, ratios } = pairs[i]!;
    const { label, unit, target } = figures[name];
    const ratio = median(ratios);
    printRow(label, {
      [`this_${unit}`]: median(ours),
      [`baseline_${unit}`]: median(theirs),
      ratio,
      ratios: `${Math.min(...ratios).toFixed(3)}-${Math.max(...ratios).toFixed(3)}`,
      target: target(ratio) ? "met" : "MISSED",
    });
    result[name] = { ours: median(ours), theirs: median(theirs) };
  });
  return result;
}

const faster = (ratio: number) => ratio >= 1 - TOLERANCE;
const quicker = (ratio: number) => ratio <= 1 + TOLERANCE;

/** lockd's CPU time so far (user + system, /proc/<pid>/stat, in clock ticks of 10 ms), in ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "latin1").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * Raw-socket load against `build`'s lockd: the op rate, the acquire p50, and lockd's CPU time per
 * op in µs (over the whole run, warm-up included, per measured op: the same bias for both builds).
 * On a shared machine the CPU time moves much less than the rate, which counts the other
 * processes' turns on lockd's core too.
 */
async function raw(
  build: Build,
  serverCpu: string,
  loadCpu: string,
  load: { mode: "cycle" | "contend"; connections: number; inflight: number },
): Promise<{ rate: number; p50: number; cpuUsPerOp: number }> {
  const served = await startLockd(serverCpu, [], build.main);
  try {
    const before = cpuMs(served.child.pid!);
    const result = await runLoad(loadCpu, { ...load, port: served.port, durationMs: DURATION_MS });
    const cpuUsPerOp = ((cpuMs(served.child.pid!) - before) * 1000) / result.ops;
    return { rate: result.ops / result.seconds, p50: result.p50, cpuUsPerOp };
  } finally {
    served.stop();
  }
}

async function throughput(): Promise<void> {
  console.log("\n# raw-socket load, exclusive locks (lockd cpu 0, load cpu 1): ops/s, this / baseline");
  const loads = [
    { label: "1024 in flight, 1 connection", mode: "cycle", connections: 1, inflight: 1024 },
    { label: "1024 in flight, 4 connections", mode: "cycle", connections: 4, inflight: 256 },
    { label: "64 waiters on one key (handoffs)", mode: "contend", connections: 64, inflight: 1 },
  ] as const;
  for (const { label, ...load } of loads) {
    await compare(
      {
        rate: { label, unit: "per_s", target: faster },
        cpuUsPerOp: { label: `${label}, lockd cpu us/op`, unit: "us", target: quicker },
      },
      async (build) => {
        const { rate, cpuUsPerOp } = await raw(build, "0", "1", load);
        return { rate, cpuUsPerOp };
      },
    );
  }
}

async function latency(): Promise<void> {
  console.log("\n# raw-socket load, one request in flight (lockd and load cpu 0): acquire p50 ms");
  const load = { mode: "cycle", connections: 1, inflight: 1 } as const;
  await compare({ p50: { label: "acquire round trip p50", unit: "ms", target: quicker } }, async (build) => ({
    p50: (await raw(build, "0", "0", load)).p50,
  }));
}

/** Whose lockd the `client` loads talk to: each build's own, or this build's for both (`this`). */
const CLIENT_SERVER = process.env.BENCH_CLIENT_SERVER === "this" ? "this" : "own";

/** `build`'s @lock/client against its own lockd, or this build's (bench/src/client-load-worker.ts). */
async function viaClient(build: Build, serverCpu: string, clientCpu: string, inflight: number) {
  const served = await startLockd(serverCpu, [], CLIENT_SERVER === "this" ? LOCKD_MAIN : build.main);
  try {
    return await runCycleLoad(clientCpu, {
      target: { system: "lockd", port: served.port, connections: 1, clientModule: build.client },
      inflight,
      durationMs: DURATION_MS,
    });
  } finally {
    served.stop();
  }
}

async function client(): Promise<void> {
  console.log(
    CLIENT_SERVER === "this"
      ? "\n# each build's @lock/client against this build's lockd (one node, no slot map), exclusive locks"
      : "\n# each build's @lock/client against its own lockd, exclusive locks",
  );
  await compare(
    {
      rate: { label: "1024 in flight cycles/s (server cpu 0, client cpu 1)", unit: "per_s", target: faster },
      clientCpuUs: { label: "1024 in flight, client cpu us/cycle", unit: "us", target: quicker },
    },
    async (build) => {
      const load = await viaClient(build, "0", "1", 1024);
      // CPU per cycle moves much less than the rate on a shared machine (see `raw`).
      return { rate: load.ops / load.seconds, clientCpuUs: (load.clientCpuMs * 1000) / load.ops };
    },
  );
  await compare(
    { p50: { label: "sequential cycle p50 ms (both cpu 0)", unit: "ms", target: quicker } },
    async (build) => ({ p50: (await viaClient(build, "0", "0", 1)).cycleP50 }),
  );
}

async function memory(): Promise<void> {
  const { bytes } = await compare(
    {
      bytes: {
        label: `RSS per held exclusive lock at ${MEMORY_KEYS.toLocaleString("en-US")} (B)`,
        unit: "bytes",
        target: quicker,
      },
    },
    async (build) => ({ bytes: await lockdMemory(build.main) }),
    MEMORY_ROUNDS,
  );
  const ours = bytes.ours;
  printRow("this build per lock", {
    bytes: ours,
    target: ours <= MEMORY_TARGET ? `met (<= ${MEMORY_TARGET})` : `MISSED (> ${MEMORY_TARGET})`,
  });
}

const only = process.argv[2];
const sections: Record<string, () => Promise<void>> = { throughput, latency, client, memory };
console.log(
  `this build against ${baselineRoot}  node ${process.version}  ${new Date().toISOString()}  ` +
    `${DURATION_MS} ms/run, ${ROUNDS} pairs  loadavg ${loadLine()}`,
);
for (const [name, section] of Object.entries(sections)) {
  if (only === undefined || only === name) await section();
}
console.log(`loadavg at the end ${loadLine()}`);
