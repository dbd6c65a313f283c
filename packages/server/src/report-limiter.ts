import type { Timer } from "@lock/deadline-heap";

/** How often, at most, a ReportLimiter reports (lockd logs what it reports). */
export const REPORT_INTERVAL_MS = 10_000;

/** Where a ReportLimiter's interval timer runs: a node's TimerQueue (`after`), or real timers. */
export interface ReportTimers {
  after(delayMs: number, callback: () => void): Timer;
}

/** Real timers, unref'd so a pending report never holds a process open. */
const REAL_TIMERS: ReportTimers = {
  after(delayMs, callback) {
    const timeout = setTimeout(callback, delayMs);
    timeout.unref();
    return { cancel: () => clearTimeout(timeout) };
  },
};

/**
 * Reports an event at most once per interval, for events anyone who reaches the port can cause at
 * will (wrong auth secrets, failed peer handshakes) or that repeat with every redial (a broken peer
 * link): one log line each would flood the log. The first event after a quiet interval is reported at once; the ones
 * after it are counted, and when the interval ends they get one report with the latest one's
 * details and `count`, how many events the report stands for.
 *
 * Its one timer runs on `timers`: a node's TimerQueue inside lockd's cluster (so the simulator
 * steps it on its clock like every other timer of a node), real unref'd timers by default.
 */
export class ReportLimiter<T> {
  readonly #report: (details: T, count: number) => void;
  readonly #intervalMs: number;
  readonly #timers: ReportTimers;
  #interval: Timer | undefined;
  #unreported = 0;
  #latest: T | undefined;

  constructor(
    report: (details: T, count: number) => void,
    intervalMs = REPORT_INTERVAL_MS,
    timers: ReportTimers = REAL_TIMERS,
  ) {
    this.#report = report;
    this.#intervalMs = intervalMs;
    this.#timers = timers;
  }

  event(details: T): void {
    if (this.#interval === undefined) {
      this.#report(details, 1);
      this.#startInterval();
      return;
    }
    this.#unreported += 1;
    this.#latest = details;
  }

  /** Reports what was counted but not yet reported, and stops the timer. */
  flush(): void {
    this.#interval?.cancel();
    this.#interval = undefined;
    this.#reportUnreported();
  }

  #startInterval(): void {
    this.#interval = this.#timers.after(this.#intervalMs, () => {
      this.#interval = undefined;
      // A report now opens a new interval; a quiet interval ends the sequence.
      if (this.#reportUnreported()) this.#startInterval();
    });
  }

  #reportUnreported(): boolean {
    if (this.#unreported === 0 || this.#latest === undefined) return false;
    this.#report(this.#latest, this.#unreported);
    this.#unreported = 0;
    this.#latest = undefined;
    return true;
  }
}
