import type { Timer, TimerQueue } from "@lock/deadline-heap";

/** What the timer drives: the engine's single deadline structure. */
export interface DeadlineSource {
  nextDeadline(): number | undefined;
  tick(): void;
}

/**
 * The one timer behind every lease and wait: a single entry in the node's TimerQueue, armed for the
 * engine's earliest deadline. Call `poke()` after anything that may have added an earlier deadline;
 * it re-arms only when the earliest deadline moved earlier, so a busy server does not churn timers.
 */
export class DeadlineTimer {
  readonly #source: DeadlineSource;
  readonly #timers: TimerQueue;
  #timer: Timer | undefined;
  #armedFor = Number.POSITIVE_INFINITY;
  #stopped = false;

  constructor(source: DeadlineSource, timers: TimerQueue) {
    this.#source = source;
    this.#timers = timers;
  }

  poke(): void {
    if (this.#stopped) return;
    const next = this.#source.nextDeadline();
    if (next === undefined || next >= this.#armedFor) return;
    this.#arm(next);
  }

  /** Runs the timer again after `stop()` (a standby promoted to active). */
  start(): void {
    this.#stopped = false;
    this.poke();
  }

  stop(): void {
    this.#stopped = true;
    this.#armedFor = Number.POSITIVE_INFINITY;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  #arm(deadline: number): void {
    this.#timer?.cancel();
    this.#armedFor = deadline;
    this.#timer = this.#timers.at(deadline, this.#fire);
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    this.#source.tick();
    this.poke();
  };
}
