import { ReportLimiter } from "@lock/server";

/** Where the lines go: pino's `log.warn(fields, message)` in lockd. */
export type WarnLog = (fields: { remote: string; failures: number }, message: string) => void;

export const AUTH_FAILURE_LOG_INTERVAL_MS = 10_000;

/**
 * Logs wrong auth secrets at most once per interval (a ReportLimiter): a guessing client can fail
 * thousands of times a second, and a line each would flood the log. `failures` is how many failures
 * a line stands for, `remote` the address of the latest. The secret never gets here: the server
 * reports only the address.
 */
export class AuthFailureLog {
  readonly #limiter: ReportLimiter<string>;

  constructor(warn: WarnLog, intervalMs = AUTH_FAILURE_LOG_INTERVAL_MS) {
    this.#limiter = new ReportLimiter(
      (remote, failures) => warn({ remote, failures }, "authentication failed"),
      intervalMs,
    );
  }

  failed(remote: string): void {
    this.#limiter.event(remote);
  }

  /** Logs what was counted but not yet logged, and stops the timer (lockd is stopping). */
  flush(): void {
    this.#limiter.flush();
  }
}
