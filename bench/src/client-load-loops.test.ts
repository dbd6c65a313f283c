import { describe, expect, it } from "vitest";
import { Countdown, HandoffCounter } from "./client-load-loops.js";

describe("HandoffCounter", () => {
  it("counts a handoff only when the grant goes to another contender than the last holder", () => {
    const counter = new HandoffCounter();
    for (const contender of [3, 3, 5, 3, 3, 3, 8]) counter.grant(contender);
    expect({ grants: counter.grants, handoffs: counter.handoffs }).toEqual({ grants: 7, handoffs: 3 });
  });
});

describe("Countdown", () => {
  it("resolves once ticked as many times as its count, not before", async () => {
    const countdown = new Countdown(3);
    let reached = false;
    void countdown.reached.then(() => {
      reached = true;
    });
    countdown.tick();
    countdown.tick();
    await Promise.resolve();
    expect(reached).toBe(false);
    countdown.tick();
    await countdown.reached;
    expect(reached).toBe(true);
    countdown.tick(); // more ticks change nothing
  });

  it("is reached at once with nothing to count", async () => {
    await expect(new Countdown(0).reached).resolves.toBeUndefined();
  });
});
