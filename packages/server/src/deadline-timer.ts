import type { Clock } from "./engine/clock.js";

/** What the timer drives: the engine's single deadline structure. */
export interface DeadlineSource {
  nextDeadline(): number | undefined;
  tick(): void;
}

/**
 * The one real timer behind every lease and wait: a single `setTimeout` armed for the engine's
 * earliest deadline. Call `poke()` after anything that may have added an earlier deadline; it
 * re-arms only when the earliest deadline moved earlier, so a busy server does not churn timers.
 */
export class DeadlineTimer {
  readonly #source: DeadlineSource;
  readonly #clock: Clock;
  #timer: NodeJS.Timeout | undefined;
  #armedFor = Number.POSITIVE_INFINITY;
  #stopped = false;

  constructor(source: DeadlineSource, clock: Clock) {
    this.#source = source;
    this.#clock = clock;
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
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(deadline: number): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#armedFor = deadline;
    // Timers have millisecond granularity: round up so the engine finds the deadline due.
    const delay = Math.max(0, Math.ceil(deadline - this.#clock.now()));
    this.#timer = setTimeout(this.#fire, delay);
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    this.#source.tick();
    this.poke();
  };
}
