import { ManualClock, TimerQueue } from "@lock/deadline-heap";
import { describe, expect, it } from "vitest";
import { ReportLimiter } from "./report-limiter.js";

describe("ReportLimiter on a timer queue", () => {
  it("reports the first event at once and the rest once per interval, on the queue's clock", () => {
    const clock = new ManualClock();
    const timers = new TimerQueue(clock, { host: "manual" });
    const reports: Array<[string, number]> = [];
    const limiter = new ReportLimiter<string>(
      (details, count) => reports.push([details, count]),
      1_000,
      timers,
    );
    limiter.event("a");
    limiter.event("b");
    limiter.event("c");
    expect(reports).toEqual([["a", 1]]);
    clock.advance(999);
    timers.runDue();
    expect(reports).toEqual([["a", 1]]);
    clock.advance(1);
    timers.runDue();
    expect(reports).toEqual([
      ["a", 1],
      ["c", 2],
    ]);
    // A quiet interval ends the sequence: nothing pending, and the next event is reported at once.
    clock.advance(1_000);
    timers.runDue();
    expect(timers.size).toBe(0);
    limiter.event("d");
    expect(reports.at(-1)).toEqual(["d", 1]);
    limiter.event("e");
    limiter.flush();
    expect(reports.at(-1)).toEqual(["e", 1]);
    expect(timers.size).toBe(0);
  });
});
