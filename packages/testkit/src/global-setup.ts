import { buildLockd } from "./index.js";

/** Vitest globalSetup for suites that start real lockd processes: build lockd once first. */
export default function setup(): void {
  buildLockd();
}
