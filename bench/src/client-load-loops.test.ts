import { describe, expect, it } from "vitest";
import { HandoffCounter } from "./client-load-loops.js";

describe("HandoffCounter", () => {
  it("counts a handoff only when the grant goes to another contender than the last holder", () => {
    const counter = new HandoffCounter();
    for (const contender of [3, 3, 5, 3, 3, 3, 8]) counter.grant(contender);
    expect({ grants: counter.grants, handoffs: counter.handoffs }).toEqual({ grants: 7, handoffs: 3 });
  });
});
