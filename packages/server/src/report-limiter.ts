/** How often, at most, a ReportLimiter reports (lockd logs what it reports). */
export const REPORT_INTERVAL_MS = 10_000;

/**
 * Reports an event at most once per interval, for events anyone who reaches the port can cause at
 * will (wrong auth secrets, failed peer handshakes) or that repeat with every redial (a broken peer
 * link): one log line each would flood the log. The first event after a quiet interval is reported at once; the ones
 * after it are counted, and when the interval ends they get one report with the latest one's
 * details and `count`, how many events the report stands for.
 *
 * Not thread-safe, which JavaScript rules out; the timer is unref'd so it never holds a process open.
 */
export class ReportLimiter<T> {
  readonly #report: (details: T, count: number) => void;
  readonly #intervalMs: number;
  #interval: NodeJS.Timeout | undefined;
  #unreported = 0;
  #latest: T | undefined;

  constructor(report: (details: T, count: number) => void, intervalMs = REPORT_INTERVAL_MS) {
    this.#report = report;
    this.#intervalMs = intervalMs;
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
    if (this.#interval) clearTimeout(this.#interval);
    this.#interval = undefined;
    this.#reportUnreported();
  }

  #startInterval(): void {
    this.#interval = setTimeout(() => {
      this.#interval = undefined;
      // A report now opens a new interval; a quiet interval ends the sequence.
      if (this.#reportUnreported()) this.#startInterval();
    }, this.#intervalMs);
    this.#interval.unref();
  }

  #reportUnreported(): boolean {
    if (this.#unreported === 0 || this.#latest === undefined) return false;
    this.#report(this.#latest, this.#unreported);
    this.#unreported = 0;
    this.#latest = undefined;
    return true;
  }
}
