import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { CycleLoad } from "./client-load-loops.js";
import type { Gap } from "./grant-gaps.js";
import { BENCH_DIST, firstJsonLine, spawnPinned } from "./spawn.js";

/**
 * The worker processes of bench/src/slots-bench.ts, each pinned to a core, and what they say: one
 * JSON line per step on stdout. A worker that waits for its next step waits for SIGUSR1.
 */

/** bench/src/slots-load-worker.ts: `inflight` acquire+release loops through one LockClient. */
export interface SlotsLoadOptions {
  /** The one address the client is given (it learns the others from the slot map). */
  readonly server: string;
  readonly inflight: number;
  readonly durationMs: number;
  /** Prefixes every key, so that load processes running at once never contend. */
  readonly keyPrefix: string;
  /** A key acquired (and refused) before the load: its `S` reply makes the client fetch the map. */
  readonly primeKey?: string | undefined;
}

export interface SlotsLoad extends CycleLoad {
  /** The process's CPU time over the load (warm-up and measurement), in ms, and its wall time. */
  readonly cpuMs: number;
  readonly wallMs: number;
  /** `S` and `M` redirects the client followed during the load (after the prime key's). */
  readonly redirects: number;
}

export function runSlotsLoad(cpu: string, options: SlotsLoadOptions): Promise<SlotsLoad> {
  return firstJsonLine(worker("slots-load-worker.js", cpu, options), (line) => "seconds" in line);
}

/** bench/src/slot-holders-worker.ts: holds `count` locks of one slot until SIGUSR1 (then releases them). */
export interface HoldersOptions {
  readonly server: string;
  /** The keys are `<keyPrefix><i>`, i < count (a hash tag in the prefix puts them in one slot). */
  readonly keyPrefix: string;
  readonly count: number;
  readonly leaseMs: number;
  /** Extend each lease until it is refused (the slot is moving) and let it run out then. */
  readonly autoExtend: boolean;
}

/** bench/src/slot-probes-worker.ts: one loop per key, acquire → release, until SIGUSR1 and one more grant. */
export interface ProbesOptions {
  readonly server: string;
  /** Probe keys by group (the moving slot's, another slot of each cluster's). */
  readonly groups: Readonly<Record<string, readonly string[]>>;
  /** How long one acquire may wait (the probe fails beyond: the slot never came back). */
  readonly waitMs: number;
}

export interface ProbeResult {
  readonly group: string;
  readonly key: string;
  readonly grants: number;
  /** The longest stretch between two grants, on the wall clock (ms since the epoch). */
  readonly longest: Gap;
}

/** A running worker and the next line it will say. */
export interface Worker {
  readonly child: ChildProcess;
  next<T>(accept: (line: Record<string, unknown>) => boolean): Promise<T>;
  /** Its next step (SIGUSR1). */
  step(): void;
  stop(): void;
}

export function startHolders(cpu: string, options: HoldersOptions): Worker {
  return workerHandle(worker("slot-holders-worker.js", cpu, options));
}

export function startProbes(cpu: string, options: ProbesOptions): Worker {
  return workerHandle(worker("slot-probes-worker.js", cpu, options));
}

function worker(file: string, cpu: string, options: object): ChildProcess {
  return spawnPinned(cpu, [join(BENCH_DIST, file), JSON.stringify(options)]);
}

function workerHandle(child: ChildProcess): Worker {
  return {
    child,
    next: (accept) => firstJsonLine(child, accept),
    step: () => child.kill("SIGUSR1"),
    stop: () => child.kill("SIGKILL"),
  };
}

/** Now on the wall clock with sub-ms precision: comparable between the bench's processes. */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}
