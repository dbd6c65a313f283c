import type { ManualClock, TimerQueue } from "@lock/deadline-heap";

/** Lets the promise continuations queued now run (a store answer, what it starts). */
export const flushPromises = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A driver for a manual clock and its timer queue: `advance(ms)` moves the clock by `ms`, running
 * each timer due on the way and the promise continuations it starts, so store calls answered by a
 * memory store complete in between.
 */
export function manualTime(clock: ManualClock, timers: TimerQueue): (ms: number) => Promise<void> {
  return async (ms) => {
    const until = clock.now() + ms;
    await flushPromises();
    for (;;) {
      const next = timers.nextDeadline;
      if (next === undefined || next > until) break;
      clock.set(Math.max(next, clock.now()));
      timers.runDue();
      await flushPromises();
    }
    clock.set(until);
    await flushPromises();
  };
}
