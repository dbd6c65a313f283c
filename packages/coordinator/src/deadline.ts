/** How long one store call may take before it rejects with CoordinatorUnavailableError, by default. */
export const DEFAULT_CALL_TIMEOUT_MS = 2000;

/**
 * How often a watch reads its document again (and checks its connection) unless set: a watch whose
 * stream or connection died in silence still sees every change within this long. One small read per
 * watched document.
 */
export const DEFAULT_WATCH_RESYNC_MS = 10_000;

/**
 * Settles with `work`'s outcome, or rejects with a timeout error after `ms` if it has not settled.
 * `work` keeps running (its late outcome is swallowed): the caller must treat a timed-out call as one
 * whose effect is unknown, which the contract allows.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
