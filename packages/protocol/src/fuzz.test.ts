import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { peerFrame, reply, request } from "./arbitraries.test.data.js";
import { isDecodeError } from "./decode-error.js";
import { ReplyDecoder, RequestDecoder } from "./decoders.js";
import { encodeReply } from "./encode.js";
import type { ProtocolLimits } from "./limits.js";
import type { Reply, Request } from "./messages.js";
import { parseReplyLine } from "./parse-reply.js";
import { parseRequestLine } from "./parse-request.js";
import type { PeerFrame } from "./peer.js";
import { concatBytes, encodeRequestOrPeer, utf8 } from "./testing.test.data.js";

const SMALL: ProtocolLimits = { maxLineBytes: 64, maxKeyBytes: 16 };
const DEFAULT: ProtocolLimits = { maxLineBytes: 65_536, maxKeyBytes: 1024 };

interface Decoder {
  push(chunk: Uint8Array): object[];
  readonly bufferedBytes: number;
}

/** Each side's decoder, a line it must decode after any garbage, and what that line decodes to. */
const SIDES = [
  {
    side: "request",
    newDecoder: (limits: ProtocolLimits): Decoder => new RequestDecoder(limits),
    probe: "P sync",
    expected: { op: "P", nonce: "sync" },
    validStream: fc
      .array(fc.oneof(request, peerFrame), { minLength: 1, maxLength: 6 })
      .map((values) => values.map(encodeRequestOrPeer)),
  },
  {
    side: "reply",
    newDecoder: (limits: ProtocolLimits): Decoder => new ReplyDecoder(limits),
    probe: "R k 1",
    expected: { kind: "R", key: "k", released: true },
    validStream: fc
      .array(reply, { minLength: 1, maxLength: 6 })
      .map((values) => values.map((v) => encodeReply(v))),
  },
] as const;

// Bytes that matter to the framing and the parsers turn up far more often than at random.
const byte = fc.oneof(
  fc.integer({ min: 0, max: 255 }),
  fc.constantFrom(
    0x0a,
    0x0d,
    0x20,
    0x21,
    0x2d,
    0x30,
    0x31,
    0x41,
    0x45,
    0x49,
    0x50,
    0x52,
    0x80,
    0xc3,
    0xe2,
    0xf0,
    0xff,
  ),
);
const garbage = fc.array(byte, { maxLength: 400 }).map((bytes) => new Uint8Array(bytes));
const chunkSizes = fc.array(fc.integer({ min: 1, max: 97 }), { minLength: 1, maxLength: 10 });

type Mutation = { kind: "insert" | "delete" | "flip"; at: number; value: number };
const mutations = fc.array(
  fc.record({
    kind: fc.constantFrom("insert", "delete", "flip"),
    at: fc.nat(),
    value: fc.integer({ min: 0, max: 255 }),
  }) as fc.Arbitrary<Mutation>,
  { maxLength: 6 },
);

function mutate(bytes: Uint8Array, changes: readonly Mutation[]): Uint8Array {
  const out = [...bytes];
  for (const { kind, at, value } of changes) {
    const i = out.length === 0 ? 0 : at % out.length;
    if (kind === "insert") out.splice(i, 0, value);
    else if (kind === "delete") out.splice(i, 1);
    else if (out.length > 0) out[i] = out[i]! ^ (1 << (value % 8));
  }
  return new Uint8Array(out);
}

/**
 * Feeds `input` in chunks of the given sizes (cycled), checking the memory bound after every push,
 * then a "\n" and the side's probe line, which must come out decoded: the decoder has resynchronised.
 */
function expectSurvivesAndResyncs(
  side: (typeof SIDES)[number],
  limits: ProtocolLimits,
  input: Uint8Array,
  sizes: readonly number[],
): void {
  const decoder = side.newDecoder(limits);
  let offset = 0;
  for (let i = 0; offset < input.length; i++) {
    const size = sizes[i % sizes.length]!;
    decoder.push(input.subarray(offset, offset + size));
    offset += size;
    expect(decoder.bufferedBytes).toBeLessThan(limits.maxLineBytes);
  }
  expect(decoder.push(utf8(`\n${side.probe}\n`)).at(-1)).toStrictEqual(side.expected);
  expect(decoder.bufferedBytes).toBe(0);
}

describe.each(SIDES)("fuzz: the $side decoder never throws, stays bounded and resynchronises", (side) => {
  it.each([
    ["small", SMALL],
    ["default", DEFAULT],
  ] as const)("random bytes, random chunks (%s limits)", (_, limits) => {
    fc.assert(
      fc.property(garbage, chunkSizes, (input, sizes) =>
        expectSurvivesAndResyncs(side, limits, input, sizes),
      ),
      { numRuns: 300 },
    );
  });

  it("mutated valid streams, random chunks", () => {
    fc.assert(
      fc.property(side.validStream, mutations, chunkSizes, (lines, changes, sizes) => {
        expectSurvivesAndResyncs(side, SMALL, mutate(utf8(lines.join("")), changes), sizes);
      }),
      { numRuns: 300 },
    );
  });

  it("an endless line costs no more memory than the limit, and is reported once", () => {
    const decoder = side.newDecoder(SMALL);
    const chunk = concatBytes([utf8("A "), new Uint8Array(1000).fill(0x61)]);
    const out = [];
    for (let i = 0; i < 100; i++) {
      out.push(...decoder.push(chunk));
      expect(decoder.bufferedBytes).toBeLessThan(SMALL.maxLineBytes);
    }
    expect(out.map((e) => ("code" in e ? e.code : e))).toStrictEqual(["LINE_TOO_LONG"]);
  });
});

// Any UTF-16 unit, lone surrogates included.
const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
// Fields that parse, nearly parse, or do not parse at all, so that lines get past the verb.
const field = fc.oneof(
  fc.constantFrom(
    ..."A Y R X P H I T N M E !J !B !S !h !s !G !F !X !P !O !K ? - 0 1 active standby BAD_KEY a=b".split(" "),
    "10.0.0.1:7420",
    "[::1]:1",
    "",
  ),
  fc.stringMatching(/^[0-9]{1,21}(\.[0-9]{0,4})?$/),
  fc.stringMatching(/^[A-Za-z0-9_.:=-]{1,10}$/),
  fc.string({ unit: anyUnit, maxLength: 6 }),
);
// A valid line with one field replaced, dropped or added: reaches every field check of every verb.
const validLine = fc.oneof(
  fc.oneof(request, peerFrame).map(encodeRequestOrPeer),
  reply.map((v) => encodeReply(v)),
);
const fieldMutated = fc
  .tuple(validLine, fc.nat(), fc.constantFrom("replace", "drop", "add"), field)
  .map(([line, at, change, text]) => {
    const fields = line.slice(0, -1).split(" ");
    const i = at % fields.length;
    if (change === "replace") fields[i] = text;
    else if (change === "drop") fields.splice(i, 1);
    else fields.splice(i, 0, text);
    return fields.join(" ");
  });
const anyText = fc.oneof(
  { arbitrary: fc.string({ unit: anyUnit, maxLength: 60 }), weight: 1 },
  { arbitrary: fc.array(field, { minLength: 1, maxLength: 7 }).map((fields) => fields.join(" ")), weight: 2 },
  { arbitrary: fieldMutated, weight: 4 },
);

const reencodeRequest = (value: Request | PeerFrame) =>
  parseRequestLine(encodeRequestOrPeer(value).slice(0, -1), SMALL);
const reencodeReply = (value: Reply) => parseReplyLine(encodeReply(value).slice(0, -1), SMALL);

describe("fuzz: the line parsers never throw, and whatever they accept re-encodes to the same value", () => {
  it.each([
    ["parseRequestLine", (line: string) => parseRequestLine(line, SMALL), reencodeRequest],
    ["parseReplyLine", (line: string) => parseReplyLine(line, SMALL), reencodeReply],
  ] as const)("%s", (_, parse, reencode) => {
    fc.assert(
      fc.property(anyText, (line) => {
        const value = parse(line);
        if (isDecodeError(value)) return;
        expect((reencode as (v: typeof value) => unknown)(value)).toStrictEqual(value);
      }),
      { numRuns: 2000 },
    );
  });
});
