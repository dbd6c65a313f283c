import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decideRead, decideWrite, type FenceMarks } from "./rule.js";

type Step = { kind: "write" | "read" | "record"; token: bigint };
const steps = fc.array(
  fc.record({
    kind: fc.constantFrom<Step["kind"]>("write", "read", "record"),
    token: fc.bigInt({ min: 0n, max: 12n }),
  }),
  { maxLength: 30 },
);

/**
 * The rule stated over the whole history, with nothing forgotten: a write needs a token at least every
 * accepted write's and every recorded read's; a read, at least every accepted write's.
 */
function fromHistory(writes: readonly bigint[], reads: readonly bigint[], step: Step): boolean {
  const notBelow = (tokens: readonly bigint[]) => tokens.every((token) => step.token >= token);
  return step.kind === "write" ? notBelow(writes) && notBelow(reads) : notBelow(writes);
}

describe("the fencing rules (rule.ts)", () => {
  it("decide as the whole history would: the two marks forget nothing that matters (property)", () => {
    fc.assert(
      fc.property(steps, (sequence) => {
        let marks: FenceMarks = {};
        const writes: bigint[] = [];
        const reads: bigint[] = [];
        for (const step of sequence) {
          const decision =
            step.kind === "write"
              ? decideWrite(marks, step.token)
              : decideRead(marks, step.token, step.kind === "record");
          expect(decision.accepted).toBe(fromHistory(writes, reads, step));
          if (!decision.accepted) continue;
          marks = decision.marks;
          if (step.kind === "write") writes.push(step.token);
          if (step.kind === "record") reads.push(step.token);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("names the mark that refused: a newer write, else a newer recorded read", () => {
    expect(decideWrite({ write: 5n, read: 9n }, 4n)).toEqual({
      accepted: false,
      refusal: { code: "FENCE_STALE_TOKEN", refusedBy: "write", current: 5n },
    });
    expect(decideWrite({ write: 5n, read: 9n }, 7n)).toEqual({
      accepted: false,
      refusal: { code: "FENCE_NEWER_READ", refusedBy: "read", current: 9n },
    });
    expect(decideRead({ write: 5n }, 4n, true)).toEqual({
      accepted: false,
      refusal: { code: "FENCE_STALE_READ", refusedBy: "write", current: 5n },
    });
  });

  it("accepts equal tokens (the same grant) and clears the read mark on a write", () => {
    expect(decideWrite({ write: 5n, read: 9n }, 9n)).toEqual({ accepted: true, marks: { write: 9n } });
    expect(decideRead({ write: 5n }, 5n, true)).toEqual({ accepted: true, marks: { write: 5n, read: 5n } });
    expect(decideRead({ read: 7n }, 6n, true)).toEqual({ accepted: true, marks: { read: 7n } });
    expect(decideRead({}, 6n, false)).toEqual({ accepted: true, marks: {} });
  });
});
