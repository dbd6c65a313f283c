import type { ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { join } from "node:path";

/**
 * With `LOCK_TEST_LOG_DIR` set, a copy of a lockd process's stdout and stderr goes to
 * `<dir>/lockd-<pid>.out` and `.err` (its command line first), kept after the test: for a long
 * real-process test that fails once in a while (resync.test.ts), the role changes, stalls and peer
 * losses of every node, and whatever a `NODE_OPTIONS=--require` preload writes to stderr
 * (`loop-monitor.cjs`: event-loop blocks and GC pauses).
 */
export function keepLogs(child: ChildProcess, args: readonly string[]): void {
  const dir = process.env.LOCK_TEST_LOG_DIR;
  if (dir === undefined || dir === "") return;
  for (const [stream, suffix] of [
    [child.stdout, "out"],
    [child.stderr, "err"],
  ] as const) {
    const file = createWriteStream(join(dir, `lockd-${child.pid}.${suffix}`), { flags: "a" });
    file.write(`# ${process.execPath} ${args.join(" ")}\n`);
    stream?.pipe(file);
  }
}
