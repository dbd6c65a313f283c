import { setImmediate as nextTurn } from "node:timers/promises";
import type { Locker } from "./lockers/locker.js";
import { jainIndex, measurementWindow, percentile } from "./report.js";

/** Uncontended acquire+release cycles: one op = one cycle; latencies in ms. */
export interface CycleLoad {
  readonly ops: number;
  readonly seconds: number;
  readonly acquireP50: number;
  readonly acquireP99: number;
  readonly cycleP50: number;
  readonly cycleP99: number;
  readonly samples: number;
}

/** Contenders on one key: grants, real handoffs, fairness and waits (ms). */
export interface ContendLoad {
  readonly seconds: number;
  readonly grants: number;
  /** Grants to another contender than the one that held the key last. */
  readonly handoffs: number;
  /** Jain's fairness index over the contenders' grant counts. */
  readonly jain: number;
  readonly minGrants: number;
  readonly maxGrants: number;
  readonly waitP50: number;
  readonly waitP99: number;
}

/**
 * Resolves `reached` once `tick()` has been called `count` times. The measurement starts after it:
 * a slow system with many requests in flight (etcd at 1024: 1.7 s for a first cycle on a busy
 * machine) would otherwise be measured while its loops are still starting.
 */
export class Countdown {
  readonly reached: Promise<void>;
  #left: number;
  #resolve!: () => void;

  constructor(count: number) {
    this.#left = count;
    this.reached = new Promise((resolve) => {
      this.#resolve = resolve;
    });
    if (count <= 0) this.#resolve();
  }

  tick(): void {
    if (this.#left > 0 && --this.#left === 0) this.#resolve();
  }
}

/**
 * `inflight` loops, each repeating acquire(its own key) → release as fast as it can, the way an
 * application would; the library pipelines or pools them as it does. The measurement starts after
 * as many cycles as loops, after the usual warm-up. (Not every loop's first cycle: etcd at 1024 in
 * flight finished most loops' first cycles within 3 s and the last ones after 25 s.)
 */
export async function cycleLoad(locker: Locker, inflight: number, durationMs: number): Promise<CycleLoad> {
  const acquireLatencies: number[] = [];
  const cycleLatencies: number[] = [];
  let ops = 0;
  let measuring = false;
  let running = true;
  const firstCycles = new Countdown(inflight);
  const loop = async (slot: number) => {
    const key = `bench:${slot}`;
    while (running) {
      const started = performance.now();
      const held = await locker.acquire(key, slot);
      const acquired = performance.now();
      await held.release();
      firstCycles.tick();
      if (measuring) {
        ops += 1;
        // Sampling every cycle at 1024 in flight would measure the array more than the library.
        if (inflight <= 16 || ops % 64 === 0) {
          acquireLatencies.push(acquired - started);
          cycleLatencies.push(performance.now() - started);
        }
      }
    }
  };
  const loops = Array.from({ length: inflight }, (_, slot) => loop(slot));
  await firstCycles.reached;
  const seconds = await measurementWindow(durationMs, (on) => {
    measuring = on;
  });
  running = false;
  await Promise.all(loops);
  acquireLatencies.sort((a, b) => a - b);
  cycleLatencies.sort((a, b) => a - b);
  return {
    ops,
    seconds,
    acquireP50: percentile(acquireLatencies, 50),
    acquireP99: percentile(acquireLatencies, 99),
    cycleP50: percentile(cycleLatencies, 50),
    cycleP99: percentile(cycleLatencies, 99),
    samples: cycleLatencies.length,
  };
}

/**
 * Counts grants and real handoffs in grant order. Grants of one exclusive key are seen here in the
 * order the server made them: a holder releases only after its grant arrived, and the next grant
 * comes after that release.
 */
export class HandoffCounter {
  grants = 0;
  handoffs = 0;
  #lastHolder: number | undefined;

  grant(contender: number): void {
    this.grants += 1;
    if (this.#lastHolder !== undefined && this.#lastHolder !== contender) this.handoffs += 1;
    this.#lastHolder = contender;
  }
}

/**
 * `contenders` loops on one key, each repeating acquire → critical section (one event-loop turn) →
 * release, as fast as it can. The measurement starts after as many grants as contenders (one round,
 * if the system serves them in order), after the usual warm-up.
 */
export async function contendLoad(
  locker: Locker,
  key: string,
  contenders: number,
  durationMs: number,
): Promise<ContendLoad> {
  const grantsOf = Array.from({ length: contenders }, () => 0);
  const waits: number[] = [];
  const counter = new HandoffCounter();
  const firstRound = new Countdown(contenders);
  let measuring = false;
  let running = true;
  const loop = async (contender: number) => {
    while (running) {
      const started = performance.now();
      const held = await locker.acquire(key, contender);
      firstRound.tick();
      if (measuring) {
        waits.push(performance.now() - started);
        grantsOf[contender]! += 1;
        counter.grant(contender);
      }
      await nextTurn();
      await held.release();
    }
  };
  const loops = Array.from({ length: contenders }, (_, contender) => loop(contender));
  await firstRound.reached;
  const seconds = await measurementWindow(durationMs, (on) => {
    measuring = on;
  });
  running = false;
  await Promise.all(loops);
  waits.sort((a, b) => a - b);
  return {
    seconds,
    grants: counter.grants,
    handoffs: counter.handoffs,
    jain: jainIndex(grantsOf),
    minGrants: Math.min(...grantsOf),
    maxGrants: Math.max(...grantsOf),
    waitP50: percentile(waits, 50),
    waitP99: percentile(waits, 99),
  };
}
