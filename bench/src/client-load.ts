import { join } from "node:path";
import type { ContendLoad, CycleLoad } from "./client-load-loops.js";
import type { LockerTarget } from "./lockers/open.js";
import { BENCH_DIST, firstJsonLine, spawnPinned } from "./spawn.js";

export type { ContendLoad, CycleLoad } from "./client-load-loops.js";

/** What bench/src/client-load-worker.ts runs (passed as its one JSON argument). */
export interface ClientLoadOptions {
  readonly target: LockerTarget;
  /** `cycles` (the default): loops on keys of their own; `contend`: every loop on one key. */
  readonly scenario?: "cycles" | "contend";
  /** Loops (`cycles`) or contenders (`contend`). */
  readonly inflight: number;
  readonly durationMs: number;
}

/** What a worker measured, with its own CPU time over the load (warm-up included), in ms. */
export type Measured<T> = T & { readonly clientCpuMs: number };

function runWorker<T>(cpus: string | undefined, options: ClientLoadOptions): Promise<T> {
  const worker = spawnPinned(cpus, [join(BENCH_DIST, "client-load-worker.js"), JSON.stringify(options)]);
  return firstJsonLine<T>(worker, (value) => typeof value.seconds === "number");
}

/** Uncontended cycles through a client library, in a worker process pinned to `cpus`. */
export function runCycleLoad(
  cpus: string | undefined,
  options: Omit<ClientLoadOptions, "scenario">,
): Promise<Measured<CycleLoad>> {
  return runWorker(cpus, { ...options, scenario: "cycles" });
}

/** Contenders on one key through a client library, in a worker process pinned to `cpus`. */
export function runContendLoad(
  cpus: string | undefined,
  options: Omit<ClientLoadOptions, "scenario">,
): Promise<Measured<ContendLoad>> {
  return runWorker(cpus, { ...options, scenario: "contend" });
}
