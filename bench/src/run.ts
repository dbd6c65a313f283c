/**
 * `pnpm bench`: runs each benchmark in its own Node process, one after another, so one bench's heap
 * and JIT state cannot colour the next. Arguments after `--` are passed to every bench.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";

const BENCHES: readonly string[] = [
  "protocol-bench.js",
  "server-bench.js",
  "fence-bench.js",
  "client-bench.js",
  "modes-bench.js",
  "cluster-bench.js",
  "locks-bench.js",
];

let failed = 0;
for (const bench of BENCHES) {
  console.log(`\n## ${bench}`);
  const result = spawnSync(
    process.execPath,
    ["--expose-gc", join(import.meta.dirname, bench), ...process.argv.slice(2)],
    {
      stdio: "inherit",
    },
  );
  if (result.status !== 0) failed++;
}
process.exitCode = failed === 0 ? 0 : 1;
