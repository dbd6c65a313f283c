import type { Fault } from "./chaos-history.js";

/** A fault from `startedAt` to `settledAt` on node 0; the partitions allow two actives. */
export function fault(kind: Fault["kind"], startedAt: number, settledAt: number): Fault {
  return {
    kind,
    node: 0,
    startedAt,
    wallStartedAt: 0,
    healedAt: settledAt,
    settledAt,
    twoActives: kind === "partition-peers" || kind === "partition-full",
  };
}
