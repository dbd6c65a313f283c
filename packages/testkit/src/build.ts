import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { REPO_ROOT } from "./paths.js";

/**
 * Builds lockd (and what it depends on) with `tsc -b`, so tests that start real processes run the
 * current source. Incremental: a no-op build takes a fraction of a second. Meant for a vitest
 * `globalSetup`, which runs once before any test file.
 */
export function buildLockd(): void {
  build("lockd");
}

/** Builds the `lock` CLI (apps/lock) the same way, for tests that run it as a real process. */
export function buildLockCli(): void {
  build("lock");
}

function build(app: string): void {
  const tsc = join(REPO_ROOT, "node_modules", ".bin", "tsc");
  execFileSync(tsc, ["-b", join(REPO_ROOT, "apps", app)], { cwd: REPO_ROOT, stdio: "inherit" });
}
