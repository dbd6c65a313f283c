/** Where the lines go: pino's `log.warn(fields, message)` in lockd. */
export type WarnLog = (fields: { remote: string; failures: number }, message: string) => void;

export const AUTH_FAILURE_LOG_INTERVAL_MS = 10_000;

/**
 * Logs wrong auth secrets at most once per interval. A guessing client can fail thousands of times a
 * second, and a line each would flood the log (and cost more than the guess). The first failure
 * after a quiet interval is logged at once; the ones after it are counted, and when the interval
 * ends they get one line: `failures` is how many failures the line stands for, `remote` the address
 * of the latest. The secret never gets here: the server reports only the address.
 */
export class AuthFailureLog {
  readonly #warn: WarnLog;
  readonly #intervalMs: number;
  #interval: NodeJS.Timeout | undefined;
  #unlogged = 0;
  #latestRemote = "";

  constructor(warn: WarnLog, intervalMs = AUTH_FAILURE_LOG_INTERVAL_MS) {
    this.#warn = warn;
    this.#intervalMs = intervalMs;
  }

  failed(remote: string): void {
    if (this.#interval === undefined) {
      this.#warn({ remote, failures: 1 }, "authentication failed");
      this.#startInterval();
      return;
    }
    this.#unlogged += 1;
    this.#latestRemote = remote;
  }

  /** Logs what was counted but not yet logged, and stops the timer (lockd is stopping). */
  flush(): void {
    if (this.#interval) clearTimeout(this.#interval);
    this.#interval = undefined;
    this.#logUnlogged();
  }

  #startInterval(): void {
    this.#interval = setTimeout(() => {
      this.#interval = undefined;
      // A line now opens a new interval; a quiet interval ends the sequence.
      if (this.#logUnlogged()) this.#startInterval();
    }, this.#intervalMs);
    // A pending summary must not keep a stopping process alive.
    this.#interval.unref();
  }

  #logUnlogged(): boolean {
    if (this.#unlogged === 0) return false;
    this.#warn({ remote: this.#latestRemote, failures: this.#unlogged }, "authentication failed");
    this.#unlogged = 0;
    return true;
  }
}
