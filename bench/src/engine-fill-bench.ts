import { loadavg } from "node:os";
import { PerformanceObserver } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { RequestDecoder } from "@lock/protocol";
import type { EngineMeter } from "@lock/server";
import { LOCKD_MAIN } from "@lock/testkit";
import { printRow } from "./report.js";

/**
 * The engine's longest single step while its key table fills to `--max-keys` (5M by default), in
 * process, no sockets. Run: `pnpm bench:engine-fill` (or `node --expose-gc bench/dist/engine-fill-bench.js`).
 *
 * A table that grows in one piece (one `Map`) rehashes every entry when it doubles: at 4,194,304
 * keys that blocked the event loop 0.4–0.9 s on a loaded machine, longer than a cluster's peer
 * timeout. Keys and request ids come out of the request decoder, shaped like lockd-memory's
 * (`jobs:<n>`, ids like @lock/client's), so strings are flat as in lockd. The bench yields to the
 * event loop between batches (as lockd does between socket reads), which also lets the GC observer
 * report pauses: a slow step that overlaps a GC pause is the collector's, not the table's.
 *
 * `BENCH_ENGINE_MODULE=/path/to/server/dist/index.js` benches another build's engine (e.g. a
 * worktree of main) with this same code. `BENCH_FILL_KEYS` sets the key count.
 *
 * `cycles` (`pnpm bench:engine-fill cycles`): the engine's grant+release cycles per CPU second on
 * reused and on never-reused keys beside `BENCH_HELD` (100k) held keys, this build against
 * `BENCH_BASELINE_MODULE` (another build's `@lock/server`) in one process: `BENCH_PAIRS` (200)
 * pairs of `BENCH_CHUNK_CYCLES` (65,536) cycles each; the ratio is baseline time / this build's
 * time (above 1: this build is faster).
 *
 * `families` (`pnpm bench:engine-fill families`): the same cycles on this build's engine with
 * lockd's key-family meter (apps/lockd's ContentionMetrics, built: `--key-families` at its default)
 * against the same engine without it, in pairs as `cycles`; `cost_pct` is the meter's share added
 * to a grant+release (the target is at most 5 %). `BENCH_METER=inert` runs a meter that counts
 * nothing instead (the engine's hooks alone), `BENCH_METER=lookup` one that only looks up families.
 */
const KEYS = Number(process.env.BENCH_FILL_KEYS ?? 5_000_000);
const BATCH = 10_000;
const SLOWEST = 10;
/** Steps at least this long are kept for the report (a few thousand at most, even on a loaded machine). */
const NOTED_MS = 1;
/** Grant+release cycles per measured chunk of `cycles`. */
const CHUNK_CYCLES = Number(process.env.BENCH_CHUNK_CYCLES ?? 65_536);
/** Keys held beside the cycles of `cycles`. */
const HELD = Number(process.env.BENCH_HELD ?? 100_000);

interface EngineModule {
  LockEngine: typeof import("@lock/server").LockEngine;
  TokenIssuer: typeof import("@lock/server").TokenIssuer;
  monotonicClock: typeof import("@lock/server").monotonicClock;
}

type Engine = InstanceType<EngineModule["LockEngine"]>;

interface Step {
  ms: number;
  /** CPU time of the whole process during the step (every thread): unlike `ms`, not inflated by other processes. */
  cpuMs: number;
  keys: number;
  at: number;
}

const modulePath = process.env.BENCH_ENGINE_MODULE;
const baselinePath = process.env.BENCH_BASELINE_MODULE;
const load = async (path: string | undefined) =>
  (await import(path === undefined ? "@lock/server" : pathToFileURL(path).href)) as EngineModule;
const server = await load(modulePath);

const gcPauses: Array<{ start: number; ms: number }> = [];
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcPauses.push({ start: entry.startTime, ms: entry.duration });
});
observer.observe({ entryTypes: ["gc"] });

function batchOf(from: number, secret: string): Buffer {
  let text = "";
  for (let n = from; n < from + BATCH; n++)
    text += `A jobs:${n} 600000 0 c0ffee.${n.toString(36)}.${secret}\n`;
  return Buffer.from(text, "latin1");
}

function overlapsGc(step: Step): number {
  let ms = 0;
  for (const pause of gcPauses)
    if (pause.start < step.at + step.ms && pause.start + pause.ms > step.at) ms = Math.max(ms, pause.ms);
  return ms;
}

function newEngine(from: EngineModule, maxKeys: number, meter?: EngineMeter): Engine {
  let epoch = 1n;
  return new from.LockEngine<null>({
    clock: from.monotonicClock,
    tokens: new from.TokenIssuer(epoch, () => ++epoch),
    events: { granted() {}, timedOut() {} },
    limits: { maxKeys },
    ...(meter ? { meter } : {}),
  });
}

async function fill(): Promise<void> {
  const engine = newEngine(server, KEYS);
  const session = engine.openSession("127.0.0.1:1");
  const decoder = new RequestDecoder();
  const noted: Step[] = [];
  let longestBatch = 0;
  const started = performance.now();
  for (let from = 0; from < KEYS; from += BATCH) {
    const frames = decoder.push(batchOf(from, (from * 7919).toString(16).padStart(16, "0")));
    const batchStart = performance.now();
    for (const frame of frames) {
      if (!("op" in frame) || frame.op !== "A" || "kind" in frame)
        throw new Error("the decoder refused a line");
      const cpuAt = process.cpuUsage();
      const at = performance.now();
      const outcome = engine.acquire(session, {
        key: frame.key,
        leaseMs: frame.leaseMs,
        waitMs: frame.waitMs,
        id: frame.id,
        payload: null,
      });
      const ms = performance.now() - at;
      if (outcome.status !== "granted") throw new Error(`acquire ${frame.key}: ${outcome.status}`);
      const cpu = process.cpuUsage(cpuAt);
      const cpuMs = (cpu.user + cpu.system) / 1000;
      if (ms >= NOTED_MS || cpuMs >= NOTED_MS) noted.push({ ms, cpuMs, keys: engine.keyCount, at });
    }
    longestBatch = Math.max(longestBatch, performance.now() - batchStart);
    await new Promise((resolve) => setImmediate(resolve));
  }
  const seconds = (performance.now() - started) / 1000;
  await new Promise((resolve) => setTimeout(resolve, 50));
  const slowest = [...noted].sort((a, b) => b.ms - a.ms);
  const byCpu = [...noted].sort((a, b) => b.cpuMs - a.cpuMs);
  const withoutGc = slowest.filter((step) => overlapsGc(step) === 0);
  printRow(`fill to ${engine.keyCount.toLocaleString("en-US")} keys`, {
    longest_acquire_ms: slowest[0]?.ms ?? 0,
    at_keys: slowest[0]?.keys ?? 0,
    longest_without_gc_ms: withoutGc[0]?.ms ?? 0,
    at_keys_without_gc: withoutGc[0]?.keys ?? 0,
    longest_cpu_ms: byCpu[0]?.cpuMs ?? 0,
    at_keys_cpu: byCpu[0]?.keys ?? 0,
    longest_batch_ms: longestBatch,
    longest_gc_pause_ms: Math.max(0, ...gcPauses.map((pause) => pause.ms)),
    seconds,
  });
  const show = (steps: Step[]) =>
    steps
      .slice(0, SLOWEST)
      .map(
        (step) =>
          `${step.ms.toFixed(1)}/${step.cpuMs.toFixed(1)}@${step.keys}${overlapsGc(step) > 0 ? "(gc)" : ""}`,
      )
      .join(" ");
  console.log("steps as wall ms/cpu ms@keys held, (gc): overlaps a GC pause");
  console.log(`slowest acquires: ${show(slowest)}`);
  console.log(`slowest without a GC pause: ${show(withoutGc)}`);
  console.log(`most cpu: ${show(byCpu)}`);
}

/**
 * The cycle loop: 1024 acquires, then their releases (as a pipelining client's requests arrive:
 * never a release right after its own acquire). Its source is compiled once per engine build: one shared function would see both
 * builds' classes at its call sites, and inline them differently than lockd does.
 */
const CYCLE_LOOP = `
  let count = state.count;
  const tokens = new Array(1024);
  for (const end = count + cycles; count < end; count += 1024) {
    for (let i = 0; i < 1024; i++) {
      const outcome = engine.tryAcquire(unique ? "u:" + (count + i) : names[i], 30000, undefined, session);
      tokens[i] = outcome.status === "granted" ? outcome.token : -1n;
    }
    for (let i = 0; i < 1024; i++) engine.release(unique ? "u:" + (count + i) : names[i], tokens[i]);
  }
  state.count = count;`;

type CycleLoop = (
  engine: Engine,
  session: unknown,
  names: string[],
  unique: boolean,
  cycles: number,
  state: { count: number },
) => void;

/** One build's engine doing grant+release cycles beside `HELD` held keys, as on a loaded server. */
function cycleRunner(from: EngineModule, unique: boolean, meter?: EngineMeter): (cycles: number) => number {
  const engine = newEngine(from, 5_000_000, meter);
  const session = engine.openSession("127.0.0.1:1");
  for (let i = 0; i < HELD; i++) engine.tryAcquire(`held:${i}`, 3_600_000, undefined, session);
  const names = Array.from({ length: 1024 }, (_, i) => `cycle:${i}`);
  const loop = new Function(
    "engine",
    "session",
    "names",
    "unique",
    "cycles",
    "state",
    CYCLE_LOOP,
  ) as CycleLoop;
  const state = { count: 0 };
  // Returns the chunk's CPU milliseconds (process CPU time: the wall clock on a shared machine
  // mostly measures the other processes).
  return (cycles) => {
    const started = process.cpuUsage();
    loop(engine, session, names, unique, cycles, state);
    const cpu = process.cpuUsage(started);
    return (cpu.user + cpu.system) / 1000;
  };
}

async function cycles(): Promise<void> {
  if (baselinePath === undefined)
    throw new Error("set BENCH_BASELINE_MODULE to the other build's server/dist/index.js");
  const baseline = await load(baselinePath);
  for (const unique of [false, true])
    comparePairs(
      `cycles, ${unique ? "unique" : "reused"} keys`,
      cycleRunner(server, unique),
      cycleRunner(baseline, unique),
    );
}

/** This build's engine with lockd's key-family meter on, against it off. */
async function families(): Promise<void> {
  const lockd = (file: string) => import(new URL(file, pathToFileURL(LOCKD_MAIN)).href);
  const { ContentionMetrics } = await lockd("contention-metrics.js");
  const { KeyFamilies, DEFAULT_FAMILY_LIMIT } = await lockd("key-families.js");
  const meter = (): EngineMeter =>
    new ContentionMetrics(new KeyFamilies([], DEFAULT_FAMILY_LIMIT), DEFAULT_FAMILY_LIMIT);
  // What the engine's hooks cost alone (a meter that counts nothing), to split the cost.
  const inert: EngineMeter = {
    held: () => 0,
    freed: () => {},
    queued: () => {},
    unqueued: () => {},
    cleared: () => {},
    reusesReadings: true,
  };
  const lookup = (): EngineMeter => {
    const families = new KeyFamilies([], DEFAULT_FAMILY_LIMIT);
    return { ...inert, held: (key) => families.numberOf(key) };
  };
  const variants: Record<string, [string, () => EngineMeter]> = {
    families: ["families", meter],
    inert: ["hooks", () => inert],
    lookup: ["lookup", lookup],
  };
  const variant = variants[process.env.BENCH_METER ?? "families"];
  if (variant === undefined) throw new Error(`BENCH_METER: one of ${Object.keys(variants).join(", ")}`);
  const [name, make] = variant;
  for (const unique of [false, true]) {
    const label = `${name} on/off, ${unique ? "unique" : "reused"} keys`;
    const ratio = comparePairs(label, cycleRunner(server, unique, make()), cycleRunner(server, unique));
    printRow(`  ${label}`, { cost_pct: (1 / ratio - 1) * 100 });
  }
}

/**
 * Runs `ours` and `theirs` in `BENCH_PAIRS` pairs of chunks and prints their cycles per CPU second
 * and the ratio theirs/ours (above 1: ours is faster). Returns the median ratio.
 */
function comparePairs(
  label: string,
  ours: (cycles: number) => number,
  theirs: (cycles: number) => number,
): number {
  const pairs = Number(process.env.BENCH_PAIRS ?? 200);
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
  for (let i = 0; i < 20; i++) ours(CHUNK_CYCLES) + theirs(CHUNK_CYCLES); // warm-up (JIT)
  const ratios: number[] = [];
  const ourMs: number[] = [];
  const theirMs: number[] = [];
  // Short chunks in pairs, alternating which goes first: both sides of a pair see the same
  // machine, and the median drops the pairs a burst of other work (or a GC) landed in.
  for (let pair = 0; pair < pairs; pair++) {
    const first = pair % 2 === 0 ? ours : theirs;
    const a = first(CHUNK_CYCLES);
    const b = (first === ours ? theirs : ours)(CHUNK_CYCLES);
    const [mine, base] = first === ours ? [a, b] : [b, a];
    ourMs.push(mine);
    theirMs.push(base);
    ratios.push(base / mine);
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  printRow(label, {
    this_build: Math.round((CHUNK_CYCLES / median(ourMs)) * 1000),
    baseline: Math.round((CHUNK_CYCLES / median(theirMs)) * 1000),
    ratio_median: median(ratios),
    ratio_p25: sorted[Math.floor(pairs / 4)]!,
    ratio_p75: sorted[Math.floor((3 * pairs) / 4)]!,
  });
  return median(ratios);
}

console.log(
  `engine fill benchmark  node ${process.version}  ${new Date().toISOString()}  engine ${modulePath ?? "@lock/server"}  loadavg ${loadavg()
    .map((load) => load.toFixed(2))
    .join(" ")}`,
);
if (process.argv[2] === "cycles") await cycles();
else if (process.argv[2] === "families") await families();
else await fill();
console.log(
  `loadavg at the end ${loadavg()
    .map((load) => load.toFixed(2))
    .join(" ")}`,
);
observer.disconnect();
