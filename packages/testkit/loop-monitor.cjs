// A preload for lockd in a diagnostic run (testkit's log-dir.ts):
//   LOCK_TEST_LOG_DIR=/tmp/logs LOCK_RESYNC_NODE_OPTIONS="--require $PWD/packages/testkit/loop-monitor.cjs"
// Writes to stderr, with wall-clock times, every event-loop block of 150 ms or more (a 10 ms
// interval timer that ran late, and the CPU time used meanwhile; LOCK_LOOP_BLOCK_MS sets another
// threshold), every GC pause of 50 ms or more (its kind and the heap after), and the heap's peak
// as sampled at each tick whenever it passed the last one reported by 32 MiB (`pnpm bench:resync`
// reads these of a restarted standby).
const { performance, PerformanceObserver, constants } = require("node:perf_hooks");

const BLOCK_MS = Number(process.env.LOCK_LOOP_BLOCK_MS ?? 150);
const GC_MS = 50;
const HEAP_STEP_MB = 32;
const kinds = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [constants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb",
};
const heapMb = () => Math.round(process.memoryUsage().heapUsed / 1048576);

// The CPU the process used during a block (all its threads, GC helpers included) tells work from
// waiting: about the block's length or more, it computed; far less, it was not given a CPU.
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
let last = performance.now();
let lastCpu = cpuMs();
let reportedHeapMb = 0;
setInterval(() => {
  const heap = heapMb();
  if (heap >= reportedHeapMb + HEAP_STEP_MB) {
    reportedHeapMb = heap;
    process.stderr.write(`HEAPPEAK ${new Date().toISOString()} heapMB=${heap}\n`);
  }
  const now = performance.now();
  const cpu = cpuMs();
  if (now - last >= BLOCK_MS) {
    const gap = Math.round(now - last);
    const used = Math.round(cpu - lastCpu);
    process.stderr.write(`LOOPBLOCK ${new Date().toISOString()} gapMs=${gap} cpuMs=${used}\n`);
  }
  last = now;
  lastCpu = cpu;
}, 10).unref();

new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.duration < GC_MS) continue;
    const at = new Date(performance.timeOrigin + entry.startTime).toISOString();
    const kind = kinds[entry.detail?.kind] ?? entry.detail?.kind;
    process.stderr.write(`GC ${at} kind=${kind} ms=${Math.round(entry.duration)} heapMB=${heapMb()}\n`);
  }
}).observe({ entryTypes: ["gc"] });
