import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { durationMs, id, key, u64 } from "./arbitraries.test.data.js";
import { isDecodeError } from "./decode-error.js";
import { encodeReply, encodeRequest } from "./encode.js";
import { fastReply, fastRequest } from "./fast-path.js";
import { DEFAULT_LIMITS, type ProtocolLimits } from "./limits.js";
import type { Reply, Request } from "./messages.js";
import { parseReplyFields } from "./parse-reply.js";
import { parseRequestFields } from "./parse-request.js";

const SMALL: ProtocolLimits = { maxLineBytes: 64, maxKeyBytes: 16 };
const LIMITS = fc.constantFrom(DEFAULT_LIMITS, SMALL);
const withoutNewline = (line: string) => line.slice(0, -1);

const requestLine = fc
  .oneof(
    fc.record({ op: fc.constant("A" as const), key, leaseMs: durationMs, waitMs: durationMs }),
    fc.record({ op: fc.constant("A" as const), key, leaseMs: durationMs, waitMs: durationMs, id }),
    fc.record({ op: fc.constant("R" as const), key, token: u64 }),
  )
  .map((request: Request) => withoutNewline(encodeRequest(request)));

const replyLine = fc
  .oneof(
    fc.record({ kind: fc.constant("A" as const), key, token: u64 }),
    fc.record({ kind: fc.constant("A" as const), key, token: u64, id }),
    fc.record({ kind: fc.constant("R" as const), key, released: fc.boolean() }),
  )
  .map((reply: Reply) => withoutNewline(encodeReply(reply)));

// Characters that change how a line splits or whether a field is valid.
const edit = fc.constantFrom(
  " ",
  "  ",
  "0",
  "1",
  "9",
  "01",
  ".",
  ".5",
  "-",
  "a",
  "é",
  "\u0001",
  "\r",
  "\t",
  "",
);

/** A line with a few characters inserted, replaced or removed at random places. */
function mangled(lines: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc
    .tuple(lines, fc.array(fc.tuple(fc.nat(), fc.nat({ max: 2 }), edit), { minLength: 1, maxLength: 3 }))
    .map(([line, edits]) => {
      let text = line;
      for (const [at, removed, inserted] of edits) {
        const index = at % (text.length + 1);
        text = text.slice(0, index) + inserted + text.slice(index + removed);
      }
      return text;
    });
}

const noise = fc
  .tuple(fc.constantFrom("A ", "R ", "A", "R", "Y "), fc.array(edit, { maxLength: 8 }))
  .map(([verb, parts]) => verb + parts.join(""));

type Parse = (line: string, limits: ProtocolLimits) => object | undefined;

const SIDES: ReadonlyArray<{ side: string; valid: fc.Arbitrary<string>; fast: Parse; general: Parse }> = [
  {
    side: "request",
    valid: requestLine,
    fast: (line, limits) => fastRequest(line, limits.maxKeyBytes),
    general: parseRequestFields,
  },
  {
    side: "reply",
    valid: replyLine,
    fast: (line, limits) => fastReply(line, limits.maxKeyBytes),
    general: parseReplyFields,
  },
];

describe("fast paths", () => {
  it.each(SIDES)("take every valid A and R $side and parse it as the general parser does", (side) => {
    fc.assert(
      fc.property(side.valid, LIMITS, (line, limits) => {
        const general = side.general(line, limits)!;
        const fast = side.fast(line, limits);
        if (isDecodeError(general)) expect(fast).toBeUndefined();
        else expect(fast).toEqual(general);
      }),
      { numRuns: 2000 },
    );
  });

  it.each(SIDES)("leave every other $side line to the general parser, or agree with it", (side) => {
    const lines = fc.oneof(mangled(requestLine), mangled(replyLine), noise);
    fc.assert(
      fc.property(lines, LIMITS, (line, limits) => {
        const fast = side.fast(line, limits);
        if (fast !== undefined) expect(fast).toEqual(side.general(line, limits));
      }),
      { numRuns: 5000 },
    );
  });

  it("refuse the edge cases the general parser reports as errors", () => {
    for (const line of [
      "A  30 0",
      "A k 30",
      "A k 30 0 ",
      "A k 30 0 -x",
      "A k 30 0 a b",
      "R k 01",
      "R k 1 2 3",
      "R k 1 -x",
      "R k 1 ",
      "R k",
    ]) {
      expect(fastRequest(line, 1024), line).toBeUndefined();
    }
    for (const line of [
      "R  1",
      "R k 2",
      "R k  1",
      "R 1",
      "A k 01",
      "A k 1 ",
      "A  1",
      "A k 18446744073709551616",
    ]) {
      expect(fastReply(line, 1024), line).toBeUndefined();
    }
    expect(fastReply("A k 7 id", 1024)).toEqual({ kind: "A", key: "k", token: 7n, id: "id" });
    expect(fastRequest("A k 1.5 0", 1024)).toEqual({ op: "A", key: "k", leaseMs: 1500, waitMs: 0 });
  });
});
