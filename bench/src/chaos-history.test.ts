import { describe, expect, it } from "vitest";
import { fault } from "./chaos.test.support.js";
import { check, History, outages } from "./chaos-history.js";

/** A token of `epoch` (`token = epoch × 2^24 + sequence`). */
const token = (epoch: number, sequence: number) => (BigInt(epoch) << 24n) + BigInt(sequence);

function grant(history: History, at: number, epoch: number, sequence: number): void {
  const value = token(epoch, sequence);
  history.grants.push({ at, key: "k", token: value, node: Number((value >> 24n) & 0xffn) });
}

describe("check", () => {
  it("forgives a decrease inside a two-active window, unless windows are off (a coordinated cluster)", () => {
    const history = new History();
    history.faults.push(fault("partition-peers", 100, 200));
    grant(history, 150, 257, 5);
    grant(history, 160, 256, 9);
    expect(check(history, [])).toMatchObject({ decreasing: 0, decreasingInWindows: 1, ok: true });
    expect(check(history, [], { twoActiveWindows: false })).toMatchObject({
      decreasing: 1,
      decreasingInWindows: 0,
      ok: false,
    });
  });
});

describe("outages", () => {
  it("with byNewEpoch, counts the first grant from an epoch above every earlier one, whatever node it names", () => {
    const history = new History();
    // Store epochs do not name the node: the old active's epoch 7 and the new one's 8 both say node 7, 8.
    grant(history, 50, 7, 1);
    history.faults.push(fault("kill", 100, 3_000));
    grant(history, 110, 7, 2); // a grant of the old active's still arriving
    grant(history, 2_200, 8, 1);
    const [byNode] = outages(history, () => true);
    const [byEpoch] = outages(history, () => true, { byNewEpoch: true });
    expect(byNode!.firstGrantMs).toBe(10);
    expect(byEpoch!.firstGrantMs).toBe(2_100);
  });
});
