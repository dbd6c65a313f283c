import { EarliestTimer, type TimerQueue } from "@lock/deadline-heap";

/** What the timer drives: the engine's single deadline structure. */
export interface DeadlineSource {
  nextDeadline(): number | undefined;
  tick(): void;
}

/**
 * The one timer behind every lease and wait: an EarliestTimer on the node's TimerQueue, armed for
 * the engine's earliest deadline. Call `poke()` after anything that may have added an earlier
 * deadline; it re-arms only when the earliest deadline moved earlier, so a busy server does not
 * churn timers.
 */
export class DeadlineTimer {
  readonly #source: DeadlineSource;
  readonly #timer: EarliestTimer;
  #stopped = false;

  constructor(source: DeadlineSource, timers: TimerQueue) {
    this.#source = source;
    this.#timer = new EarliestTimer(timers, () => {
      this.#source.tick();
      this.poke();
    });
  }

  poke(): void {
    if (this.#stopped) return;
    this.#timer.schedule(this.#source.nextDeadline());
  }

  /** Runs the timer again after `stop()` (a standby promoted to active). */
  start(): void {
    this.#stopped = false;
    this.poke();
  }

  stop(): void {
    this.#stopped = true;
    this.#timer.cancel();
  }
}
