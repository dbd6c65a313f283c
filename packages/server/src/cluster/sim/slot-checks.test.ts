import { ManualClock } from "@lock/deadline-heap";
import { keySlot, SlotMap } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { CoordinationState } from "../../coordination/memory-store.js";
import { SLOT_MAP_DOCUMENT } from "../../slots/slot-map-follower.js";
import { SlotChecks } from "./slot-checks.js";

/** Each check of the slot checker fails on the history it exists for, and only on it. */
const KEY = "k0";
const SLOT = keySlot(KEY);

function checked() {
  const state = new CoordinationState(new ManualClock(0));
  const failures: string[] = [];
  let map = SlotMap.of(
    1n,
    new Map([
      ["a", ["a0:7420"]],
      ["b", ["b0:7420"]],
    ]),
    [{ from: 0, to: 16_383, cluster: "a" }],
  );
  state.writeDocument(SLOT_MAP_DOCUMENT, map.toDocument(), 0n);
  const checks = new SlotChecks(state, [KEY], (what) => failures.push(what));
  /** Writes the next version, `change` of the current one. */
  const write = (change: (current: SlotMap, version: bigint) => SlotMap) => {
    const next = change(map, map.version + 1n);
    state.writeDocument(SLOT_MAP_DOCUMENT, next.toDocument(), map.version);
    map = next;
    return next;
  };
  return { checks, failures, write };
}

describe("SlotChecks (the simulator's checker of slot ownership)", () => {
  it("a grant by a cluster the store's map does not give the slot to fails, the target's before the commit too", () => {
    const { checks, failures, write } = checked();
    checks.granted("a0", "a", KEY, 1n, undefined);
    checks.granted("b0", "b", KEY, 2n, undefined);
    expect(failures).toEqual([expect.stringMatching(/granted k0 2 .*which map v1 gives to a$/)]);
    write((map, version) => map.withMoveBegun(SLOT, SLOT, "b", version));
    checks.granted("b0", "b", KEY, 3n, undefined);
    expect(failures[1]).toMatch(/gives to a, moving here but not committed/);
  });

  it("the source may grant in a moving slot only until it has read the move", () => {
    const { checks, failures, write } = checked();
    const begun = write((map, version) => map.withMoveBegun(SLOT, SLOT, "b", version));
    checks.granted("a0", "a", KEY, 1n, undefined);
    expect(failures).toEqual([]);
    checks.granted("a0", "a", KEY, 2n, begun);
    expect(failures[0]).toMatch(/which its own map v2 has moving to b/);
  });

  it("after the commit only the target grants, and a slot that came back is counted", () => {
    const { checks, failures, write } = checked();
    write((map, version) => map.withMoveBegun(SLOT, SLOT, "b", version));
    write((map, version) => map.withMoveCommitted(SLOT, SLOT, version));
    checks.granted("b0", "b", KEY, 1n, undefined);
    expect(failures).toEqual([]);
    checks.granted("a0", "a", KEY, 2n, undefined);
    expect(failures[0]).toMatch(/gives to b/);
    write((map, version) => map.withMoveBegun(SLOT, SLOT, "a", version));
    write((map, version) => map.withMoveCommitted(SLOT, SLOT, version));
    expect(checks.counts).toEqual({ movesBegun: 2, movesCommitted: 2, keysMovedBack: 1 });
  });

  it("a map that gives a slot away without a move, or a move never committed, fails", () => {
    const { checks, failures, write } = checked();
    write((map, version) => map.withMoveBegun(SLOT, SLOT, "b", version));
    checks.finalCheck();
    expect(failures[0]).toMatch(/never finished moving from a to b/);
    const other = checked();
    other.write((map, version) => SlotMap.of(version, map.clusters, [{ from: 0, to: 16_383, cluster: "b" }]));
    expect(other.failures[0]).toMatch(/gave slot 0 to b without a move there/);
  });
});
