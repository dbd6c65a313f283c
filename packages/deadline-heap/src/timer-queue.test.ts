import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ManualClock } from "./clock.js";
import { TimerQueue } from "./timer-queue.js";

/** A TimerQueue driven by vitest fake timers; call `vi.useFakeTimers()` first. */
function fakeTimers(): TimerQueue {
  return new TimerQueue({ now: () => Date.now() });
}

describe("TimerQueue", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("runs callbacks at their time, in deadline order, ties in scheduling order", () => {
    const timers = fakeTimers();
    const ran: string[] = [];
    timers.after(30, () => ran.push("c"));
    timers.after(10, () => ran.push("a"));
    timers.after(10, () => ran.push("b"));
    vi.advanceTimersByTime(9);
    expect(ran).toEqual([]);
    vi.advanceTimersByTime(2);
    expect(ran).toEqual(["a", "b"]);
    vi.advanceTimersByTime(20);
    expect(ran).toEqual(["a", "b", "c"]);
    expect(timers.size).toBe(0);
  });

  it("never runs a callback synchronously, even one already due", () => {
    const timers = fakeTimers();
    let ran = false;
    timers.after(-5, () => {
      ran = true;
    });
    expect(ran).toBe(false);
    vi.advanceTimersByTime(1);
    expect(ran).toBe(true);
  });

  it("cancel removes a callback; cancelling twice or after it ran is harmless", () => {
    const timers = fakeTimers();
    const ran: number[] = [];
    const first = timers.after(10, () => ran.push(1));
    const second = timers.after(20, () => ran.push(2));
    first.cancel();
    first.cancel();
    vi.advanceTimersByTime(25);
    second.cancel();
    expect(ran).toEqual([2]);
  });

  it("lets a callback schedule and cancel others, including ones due in the same pass", () => {
    const timers = fakeTimers();
    const ran: string[] = [];
    const later = timers.after(10, () => ran.push("cancelled"));
    timers.after(5, () => {
      ran.push("first");
      later.cancel();
      timers.after(0, () => ran.push("scheduled from a callback"));
    });
    vi.advanceTimersByTime(20);
    expect(ran).toEqual(["first", "scheduled from a callback"]);
  });

  it("re-arms for an earlier deadline scheduled after a later one", () => {
    const timers = fakeTimers();
    const ran: number[] = [];
    timers.after(1_000, () => ran.push(1_000));
    timers.after(10, () => ran.push(10));
    vi.advanceTimersByTime(11);
    expect(ran).toEqual([10]);
  });

  it("keeps one host timer however many callbacks are pending", () => {
    const timers = fakeTimers();
    for (let i = 0; i < 1_000; i++) timers.after(100 + i, () => {});
    expect(vi.getTimerCount()).toBe(1);
  });

  it("stop drops everything and ignores later scheduling", () => {
    const timers = fakeTimers();
    let ran = 0;
    timers.after(10, () => ran++);
    timers.stop();
    timers.after(10, () => ran++);
    vi.advanceTimersByTime(100);
    expect(ran).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a throwing callback does not stop the ones after it", () => {
    const timers = fakeTimers();
    const ran: number[] = [];
    const uncaught: unknown[] = [];
    const original = globalThis.queueMicrotask;
    globalThis.queueMicrotask = (task) => {
      try {
        task();
      } catch (error) {
        uncaught.push(error);
      }
    };
    try {
      timers.after(1, () => {
        throw new Error("boom");
      });
      timers.after(1, () => ran.push(2));
      vi.advanceTimersByTime(2);
    } finally {
      globalThis.queueMicrotask = original;
    }
    expect(ran).toEqual([2]);
    expect(uncaught).toHaveLength(1);
  });

  it("runs any mix of schedules and cancels in deadline order (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ delay: fc.integer({ min: 0, max: 500 }), cancel: fc.boolean() }), {
          maxLength: 60,
        }),
        (plan) => {
          const timers = new TimerQueue({ now: () => Date.now() });
          const ran: Array<{ delay: number; index: number }> = [];
          const handles = plan.map(({ delay }, index) =>
            timers.after(delay, () => ran.push({ delay, index })),
          );
          plan.forEach(({ cancel }, index) => {
            if (cancel) handles[index]!.cancel();
          });
          vi.advanceTimersByTime(600);
          const expected = plan
            .map(({ delay, cancel }, index) => ({ delay, index, cancel }))
            .filter(({ cancel }) => !cancel)
            .sort((a, b) => a.delay - b.delay || a.index - b.index)
            .map(({ delay, index }) => ({ delay, index }));
          expect(ran).toEqual(expected);
          timers.stop();
        },
      ),
      { numRuns: 100 },
    );
  });

  describe("manual host", () => {
    it("arms no timer: callbacks run only when the driver calls runDue", () => {
      const clock = new ManualClock();
      const timers = new TimerQueue(clock, { host: "manual" });
      const ran: number[] = [];
      timers.after(10, () => ran.push(10));
      timers.after(5, () => ran.push(5));
      expect(vi.getTimerCount()).toBe(0);
      expect(timers.nextDeadline).toBe(5);
      clock.advance(20);
      expect(ran).toEqual([]);
      timers.runDue();
      expect(ran).toEqual([5, 10]);
      expect(timers.nextDeadline).toBeUndefined();
    });

    it("throws a callback's error from runDue after running the rest", () => {
      const clock = new ManualClock();
      const timers = new TimerQueue(clock, { host: "manual" });
      let after = false;
      timers.after(1, () => {
        throw new Error("boom");
      });
      timers.after(1, () => {
        after = true;
      });
      clock.advance(1);
      expect(() => timers.runDue()).toThrow("boom");
      expect(after).toBe(true);
    });
  });
});
