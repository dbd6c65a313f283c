import { describe, expect, it } from "vitest";
import { KEY_SLOTS, keySlot } from "./key-slot.js";
import { SlotMap, SlotMapError } from "./slot-map.js";

const clusters = new Map([
  ["a", ["10.0.0.1:7420", "10.0.0.2:7420"]],
  ["b", ["10.0.0.3:7420"]],
]);
const halves = [
  { from: 0, to: 8191, cluster: "a" },
  { from: 8192, to: 16383, cluster: "b" },
];

describe("SlotMap", () => {
  it("gives every key the cluster of its slot's range", () => {
    const map = SlotMap.of(3n, clusters, halves);
    for (const key of ["foo", "bar", "jobs:1", "{tenant:7}:job"])
      expect(map.clusterOf(key)).toBe(keySlot(key) < 8192 ? "a" : "b");
    expect(map.rangeOf(0).cluster).toBe("a");
    expect(map.rangeOf(KEY_SLOTS - 1).cluster).toBe("b");
  });

  it("round-trips through K reply fields and the store document, a moving range included", () => {
    const moving = [
      { from: 0, to: 99, cluster: "a", movingTo: "b" },
      { from: 100, to: 8191, cluster: "a" },
      { from: 8192, to: 16383, cluster: "b" },
    ];
    const map = SlotMap.of(9n, clusters, moving);
    expect(map.toFields()).toEqual([
      "a=10.0.0.1:7420,10.0.0.2:7420",
      "b=10.0.0.3:7420",
      "0-99:a>b",
      "100-8191:a",
      "8192-16383:b",
    ]);
    expect(SlotMap.fromFields(9n, map.toFields())).toEqual(map);
    expect(SlotMap.fromDocument(9n, map.toDocument())).toEqual(map);
    // Until the move commits, the source serves the range.
    expect(map.rangeOf(50)).toEqual(moving[0]);
  });

  it("refuses a map that leaves a slot to nobody, gives one twice, or names an unknown cluster", () => {
    const refused =
      (ranges: Parameters<typeof SlotMap.of>[2], names = clusters) =>
      () =>
        SlotMap.of(1n, names, ranges);
    expect(refused([{ from: 0, to: 8191, cluster: "a" }])).toThrow(/slots 8192-16383 belong to no cluster/);
    expect(refused([...halves, { from: 100, to: 200, cluster: "b" }])).toThrow(/overlap at slot 100/);
    expect(refused([{ from: 0, to: 16383, cluster: "c" }])).toThrow(/unknown cluster c/);
    expect(refused([{ from: 0, to: 16384, cluster: "a" }])).toThrow(/bad range/);
    expect(refused([{ from: 0, to: 16383, cluster: "a", movingTo: "a" }])).toThrow(
      /moves to the cluster it is on/,
    );
    expect(refused(halves, new Map([...clusters, ["bad name", ["10.0.0.9:7420"]]]))).toThrow(
      /bad cluster name/,
    );
    expect(
      refused(
        halves,
        new Map([
          ["a", ["no-port"]],
          ["b", ["10.0.0.3:7420"]],
        ]),
      ),
    ).toThrow(/not host:port/);
    expect(() => SlotMap.fromDocument(1n, "{")).toThrow(SlotMapError);
    expect(() => SlotMap.fromFields(1n, ["a=10.0.0.1:7420", "zero-ten:a"])).toThrow(
      /neither a cluster nor a range/,
    );
    expect(() => SlotMap.of(0n, clusters, halves)).toThrow(
      expect.objectContaining({ code: "SLOT_MAP_INVALID", message: expect.stringMatching(/version/) }),
    );
  });

  it("refuses a map too large for one K reply line", () => {
    const many = new Map(
      [...Array(64).keys()].map((i) => [
        `cluster-${i}`,
        [...Array(16).keys()].map((j) => `node-${j}.cluster-${i}.lockd.internal.example.com:7420`),
      ]),
    );
    const ranges = [...Array(64).keys()].map((i) => ({
      from: i * 256,
      to: i * 256 + 255,
      cluster: `cluster-${i}`,
    }));
    expect(() => SlotMap.of(1n, many, ranges)).toThrow(/bytes in a K reply/);
  });
});

describe("SlotMap moves", () => {
  it("a move marks part of a range as moving, then gives it to the target; neighbours merge back", () => {
    const map = SlotMap.of(3n, clusters, halves);
    const begun = map.withMoveBegun(100, 199, "b", 4n);
    expect(begun.version).toBe(4n);
    expect(begun.ranges).toEqual([
      { from: 0, to: 99, cluster: "a" },
      { from: 100, to: 199, cluster: "a", movingTo: "b" },
      { from: 200, to: 8191, cluster: "a" },
      { from: 8192, to: 16383, cluster: "b" },
    ]);
    // Until the commit the source serves the span.
    expect(begun.rangeOf(150).cluster).toBe("a");
    const done = begun.withMoveCommitted(100, 199, 5n);
    expect(done.rangeOf(150)).toEqual({ from: 100, to: 199, cluster: "b" });
    // Moving the edge of a range next to the target's merges into the target's range.
    const edge = map.withMoveBegun(8000, 8191, "b", 4n).withMoveCommitted(8000, 8191, 5n);
    expect(edge.ranges).toEqual([
      { from: 0, to: 7999, cluster: "a" },
      { from: 8000, to: 16383, cluster: "b" },
    ]);
    // And back again (A→B→A).
    const back = edge.withMoveBegun(8000, 8191, "a", 6n).withMoveCommitted(8000, 8191, 7n);
    expect(back.ranges).toEqual(map.ranges);
  });

  it("refuses a move of slots already moving, already the target's, across ranges, or to an unknown cluster", () => {
    const map = SlotMap.of(3n, clusters, halves);
    expect(() => map.withMoveBegun(8100, 8300, "b", 4n)).toThrow(/span several ranges/);
    expect(() => map.withMoveBegun(9000, 9100, "b", 4n)).toThrow(/b's already/);
    expect(() => map.withMoveBegun(0, 10, "c", 4n)).toThrow(/unknown cluster c/);
    expect(() => map.withMoveBegun(0, 10, "b", 4n).withMoveBegun(0, 10, "b", 5n)).toThrow(/already moving/);
    expect(() => map.withMoveCommitted(0, 10, 4n)).toThrow(/not moving/);
    expect(() => map.withMoveBegun(10, 5, "b", 4n)).toThrow(SlotMapError);
  });
});
