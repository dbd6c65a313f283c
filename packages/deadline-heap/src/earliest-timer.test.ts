import { describe, expect, it } from "vitest";
import { ManualClock } from "./clock.js";
import { EarliestTimer } from "./earliest-timer.js";
import { TimerQueue } from "./timer-queue.js";

function setup() {
  const clock = new ManualClock();
  const timers = new TimerQueue(clock, { host: "manual" });
  const ran: number[] = [];
  const timer = new EarliestTimer(timers, () => ran.push(clock.now()));
  const advance = (to: number) => {
    clock.set(to);
    timers.runDue();
  };
  return { timers, timer, ran, advance };
}

describe("EarliestTimer", () => {
  it("runs once, at the earliest time asked for; a later ask changes nothing, an earlier one moves it", () => {
    const { timers, timer, ran, advance } = setup();
    timer.schedule(50);
    timer.schedule(80);
    timer.schedule(undefined);
    timer.schedule(30);
    expect(timers.size).toBe(1);
    advance(29);
    expect(ran).toEqual([]);
    advance(30);
    expect(ran).toEqual([30]);
    expect(timers.size).toBe(0);
    advance(100);
    expect(ran).toEqual([30]);
  });

  it("is free again once it ran, and from inside its callback", () => {
    const clock = new ManualClock();
    const timers = new TimerQueue(clock, { host: "manual" });
    const ran: number[] = [];
    const timer: EarliestTimer = new EarliestTimer(timers, () => {
      ran.push(clock.now());
      if (ran.length < 3) timer.schedule(clock.now() + 100);
    });
    timer.schedule(10);
    for (const to of [10, 110, 210, 310]) {
      clock.set(to);
      timers.runDue();
    }
    expect(ran).toEqual([10, 110, 210]);
  });

  it("forgets a cancelled time: a later one is armed afresh", () => {
    const { timer, ran, advance } = setup();
    timer.schedule(20);
    timer.cancel();
    timer.schedule(60);
    advance(40);
    expect(ran).toEqual([]);
    advance(60);
    expect(ran).toEqual([60]);
  });
});
