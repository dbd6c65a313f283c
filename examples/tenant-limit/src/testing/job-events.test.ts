/** The log checks catch what they are there to catch: the recipe's tests rely on them. */
import { describe, expect, it } from "vitest";
import { type JobEvent, mostAtOnce, slotViolations } from "./job-events.js";

let seq = 0;
const event = (jobId: string, slot: number, token: bigint, kind: JobEvent["kind"], key = "tenant:a") => ({
  seq: ++seq,
  jobId,
  key,
  slot,
  token,
  kind,
});

describe("job event checks", () => {
  it("count overlapping jobs per key, in log order", () => {
    const log = [
      event("j1", 0, 1n, "start"),
      event("j2", 1, 2n, "start"),
      event("k1", 0, 3n, "start", "tenant:b"),
      event("j1", 0, 1n, "end"),
      event("j3", 0, 4n, "start"),
      event("j4", 2, 5n, "start"),
      event("j2", 1, 2n, "end"),
    ];
    expect(mostAtOnce(log)).toEqual(
      new Map([
        ["tenant:a", 3],
        ["tenant:b", 1],
      ]),
    );
    expect(slotViolations(log)).toEqual([]);
  });

  it("name two jobs on one slot at once, and a lower token after a higher one", () => {
    const log = [
      event("j1", 0, 7n, "start"),
      event("j2", 0, 8n, "start"),
      event("j1", 0, 7n, "end"),
      event("j2", 0, 8n, "end"),
    ];
    expect(slotViolations(log)).toEqual([
      "tenant:a slot 0: j2 beside j1",
      "tenant:a slot 0: j1 beside j2",
      "tenant:a slot 0: token 7 after 8",
    ]);
  });
});
