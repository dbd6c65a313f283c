/**
 * Time enters lockd's engine and the client's timers only through this interface, so tests drive
 * them with a manual clock.
 * `now()` is monotonic milliseconds (not wall-clock time): lease and wait deadlines must not jump
 * when an operator or NTP changes the system time.
 */
export interface Clock {
  now(): number;
}

/** The real clock: `performance.now()`, monotonic and sub-millisecond. */
export const monotonicClock: Clock = { now: () => performance.now() };

/** A clock that only moves when told to; for deterministic tests of timer logic. */
export class ManualClock implements Clock {
  #now: number;

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`cannot move a clock backwards (${ms} ms)`);
    this.#now += ms;
  }

  set(ms: number): void {
    if (ms < this.#now) throw new RangeError(`cannot move a clock backwards (${this.#now} -> ${ms})`);
    this.#now = ms;
  }
}
