// A preload for lockd in a diagnostic run (testkit's log-dir.ts):
//   LOCK_TEST_LOG_DIR=/tmp/logs LOCK_RESYNC_NODE_OPTIONS="--require $PWD/packages/testkit/loop-monitor.cjs"
// Writes to stderr, with wall-clock times, every event-loop block of 150 ms or more (a 10 ms
// interval timer that ran late) and every GC pause of 50 ms or more (its kind and the heap after).
const { performance, PerformanceObserver, constants } = require("node:perf_hooks");

const BLOCK_MS = 150;
const GC_MS = 50;
const kinds = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [constants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb",
};
const heapMb = () => Math.round(process.memoryUsage().heapUsed / 1048576);

let last = performance.now();
setInterval(() => {
  const now = performance.now();
  if (now - last >= BLOCK_MS)
    process.stderr.write(`LOOPBLOCK ${new Date().toISOString()} gapMs=${Math.round(now - last)}\n`);
  last = now;
}, 10).unref();

new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.duration < GC_MS) continue;
    const at = new Date(performance.timeOrigin + entry.startTime).toISOString();
    const kind = kinds[entry.detail?.kind] ?? entry.detail?.kind;
    process.stderr.write(`GC ${at} kind=${kind} ms=${Math.round(entry.duration)} heapMB=${heapMb()}\n`);
  }
}).observe({ entryTypes: ["gc"] });
