import { buildLockCli, buildLockd } from "./index.js";

/**
 * Vitest globalSetup for suites that start real processes: build lockd and the lock CLI once first
 * (Node 20 runs their dist/).
 */
export default function setup(): void {
  buildLockd();
  buildLockCli();
}
