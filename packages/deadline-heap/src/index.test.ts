import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type DeadlineEntry, DeadlineHeap } from "./index.js";

interface Item extends DeadlineEntry {
  readonly name: number;
}

const item = (name: number): Item => ({ name, deadline: 0, heapIndex: -1, order: name });

describe("DeadlineHeap", () => {
  it("pops due entries by deadline, equal deadlines by order, and keeps later ones", () => {
    const heap = new DeadlineHeap<Item>();
    const [a, b, c, d] = [item(1), item(2), item(3), item(4)];
    heap.schedule(c, 10);
    heap.schedule(b, 10);
    heap.schedule(a, 30);
    heap.schedule(d, 5);
    heap.schedule(a, 10); // moved earlier
    const due: number[] = [];
    for (let next = heap.popDue(10); next; next = heap.popDue(10)) due.push(next.name);
    expect(due).toEqual([4, 1, 2, 3]);
    expect([a, b, c, d].map((entry) => entry.heapIndex)).toEqual([-1, -1, -1, -1]);
    expect(heap.size).toBe(0);
  });

  it("removes and clears, leaving every entry unscheduled", () => {
    const heap = new DeadlineHeap<Item>();
    const items = [item(1), item(2), item(3)];
    for (const entry of items) heap.schedule(entry, entry.name);
    heap.remove(items[0]!);
    heap.remove(items[0]!); // a no-op the second time
    expect(heap.peek()?.name).toBe(2);
    heap.clear();
    expect(heap.size).toBe(0);
    expect(items.map((entry) => entry.heapIndex)).toEqual([-1, -1, -1]);
  });

  it("agrees with a sorted list under any sequence of schedules, moves, removes and pops", () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("schedule" as const), name: fc.nat(15), at: fc.nat(50) }),
      fc.record({ kind: fc.constant("remove" as const), name: fc.nat(15) }),
      fc.record({ kind: fc.constant("pop" as const), now: fc.nat(50) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const heap = new DeadlineHeap<Item>();
        const items = Array.from({ length: 16 }, (_, name) => item(name));
        const model = new Map<number, number>(); // name -> deadline
        const byDue = () => [...model].sort(([n1, d1], [n2, d2]) => d1 - d2 || n1 - n2).map(([name]) => name);
        for (const step of ops) {
          if (step.kind === "schedule") {
            heap.schedule(items[step.name]!, step.at);
            model.set(step.name, step.at);
          } else if (step.kind === "remove") {
            heap.remove(items[step.name]!);
            model.delete(step.name);
          } else {
            const expected = byDue()[0];
            const due = expected !== undefined && model.get(expected)! <= step.now ? expected : undefined;
            expect(heap.popDue(step.now)?.name).toBe(due);
            if (due !== undefined) model.delete(due);
          }
          expect(heap.size).toBe(model.size);
          expect(heap.peek()?.name).toBe(byDue()[0]);
        }
      }),
      { numRuns: 300 },
    );
  });
});
