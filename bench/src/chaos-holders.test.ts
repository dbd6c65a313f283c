import { describe, expect, it } from "vitest";
import { fault } from "./chaos.test.support.js";
import type { Fault } from "./chaos-history.js";
import { checkHolders, type Hold } from "./chaos-holders.js";

let nextToken = 100n;
/** A hold from `at` to `end`, asked for at `requestedAt` (default: just before `at`). */
function hold(fields: Partial<Hold> & Pick<Hold, "at" | "end">): Hold {
  return {
    key: "k",
    mode: "exclusive",
    permits: undefined,
    slot: undefined,
    token: nextToken++,
    requestedAt: fields.at - 1,
    ...fields,
  };
}
const permit = (slot: number, at: number, end: number, token?: bigint) =>
  hold({ mode: "permit", permits: 2, slot, at, end, ...(token === undefined ? {} : { token }) });

const rules = (holds: Hold[], faults: Fault[] = []) =>
  checkHolders(holds, faults, 1_000).breaks.map((found) => found.rule);

describe("checkHolders", () => {
  it("accepts exclusive holders one after another, spans that only touch, and readers together", () => {
    expect(rules([hold({ at: 0, end: 10 }), hold({ at: 10, end: 20 }), hold({ at: 25, end: 30 })])).toEqual(
      [],
    );
    const writer = hold({ at: 0, end: 10 });
    const readers = [10, 11, 12].map((at) => hold({ mode: "shared", at, end: 50 }));
    expect(rules([writer, ...readers, hold({ at: 60, end: 70 })])).toEqual([]);
  });

  it("finds a writer beside a reader, a reader beside a writer, and two writers", () => {
    expect(rules([hold({ mode: "shared", at: 0, end: 20 }), hold({ at: 10, end: 30 })])).toEqual([
      "not-alone",
    ]);
    expect(rules([hold({ at: 0, end: 20 }), hold({ mode: "shared", at: 10, end: 30 })])).toEqual([
      "not-alone",
    ]);
    expect(rules([hold({ at: 0, end: 20 }), hold({ at: 19, end: 30 })])).toEqual(["not-alone"]);
  });

  it("finds a permit over the limit and two live permits on one slot", () => {
    expect(rules([permit(0, 0, 50), permit(1, 10, 50)])).toEqual([]);
    expect(rules([permit(0, 0, 50), permit(1, 10, 50), permit(0, 20, 60)])).toEqual([
      "over-limit",
      "slot-clash",
    ]);
    expect(rules([permit(0, 0, 50), permit(0, 10, 60)])).toEqual(["slot-clash"]);
  });

  it("ignores a grant that arrived after its own lease deadline (it held nothing)", () => {
    expect(rules([hold({ at: 0, end: 50 }), hold({ at: 20, end: 15 })])).toEqual([]);
  });

  it("checks tokens in real-time order only: a grant seen before another was asked for has the lower token", () => {
    // Two permits asked for together may arrive in any order.
    expect(rules([permit(0, 5, 10, 201n), { ...permit(1, 6, 12, 200n), requestedAt: 1 }])).toEqual([]);
    // Asked for after the other's grant arrived, with a lower token: out of order.
    expect(rules([hold({ at: 0, end: 10, token: 301n }), hold({ at: 20, end: 30, token: 300n })])).toEqual([
      "token-order",
    ]);
  });

  it("counts breaks inside a fault that does not promise exclusion apart, until a lease after it settled", () => {
    const overlap = [hold({ at: 1_000, end: 3_000 }), hold({ at: 2_000, end: 4_000 })];
    const kill = fault("kill", 1_500, 2_100);
    const verdict = checkHolders(overlap, [kill], 1_000);
    expect(verdict.breaks).toEqual([]);
    expect(verdict.inWindows["not-alone"]).toBe(1);
    expect([...verdict.inWindowsByFault]).toEqual([["kill", 1]]);
    // A handoff promises exclusion; so does the time well after a kill settled.
    expect(rules(overlap, [fault("handoff", 1_500, 2_100)])).toEqual(["not-alone"]);
    expect(rules(overlap, [fault("kill", -5_000, -4_000)])).toEqual(["not-alone"]);
  });

  it("tolerates token order only in two-active windows", () => {
    const late = [hold({ at: 0, end: 10, token: 401n }), hold({ at: 20, end: 30, token: 400n })];
    expect(rules(late, [fault("kill", 15, 25)])).toEqual(["token-order"]);
    expect(rules(late, [fault("partition-peers", 15, 25)])).toEqual([]);
  });
});
