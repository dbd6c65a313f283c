import type { Clock } from "./clock.js";

/**
 * The meter's clock: the engine's latest reading, reused while the synchronous run that took it
 * lasts (one socket read's requests, at most `maxRequestsPerTurn`; one `tick()`), so a release
 * costs no clock read of its own (70–100 ns on a VM, as much as the rest of the meter). Grants feed
 * it the reading they take anyway for their deadline. A queued microtask ends the run: a reading is
 * never reused once the event loop moves on, and within a run it is late by at most the time since
 * the engine's last grant or the run's start. With `reuse` false (a meter that wants exact times,
 * e.g. a test on a manual clock) every `now()` reads the clock.
 */
export class RecentReading {
  readonly #clock: Clock;
  readonly #reuse: boolean;
  #at = 0;
  #fresh = false;
  readonly #expire = (): void => {
    this.#fresh = false;
  };

  constructor(clock: Clock, reuse: boolean) {
    this.#clock = clock;
    this.#reuse = reuse;
  }

  /** Notes a reading the engine took anyway. */
  saw(now: number): void {
    if (!this.#reuse) return;
    this.#at = now;
    if (!this.#fresh) {
      this.#fresh = true;
      queueMicrotask(this.#expire);
    }
  }

  now(): number {
    if (this.#fresh) return this.#at;
    const now = this.#clock.now();
    this.saw(now);
    return now;
  }
}
