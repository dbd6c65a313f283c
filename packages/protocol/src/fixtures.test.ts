import { describe, expect, it } from "vitest";
import { isDecodeError } from "./decode-error.js";
import { ReplyDecoder, RequestDecoder } from "./decoders.js";
import { encodeReply } from "./encode.js";
import {
  BAD_REPLIES,
  BAD_REQUESTS,
  type BadLine,
  errorShape,
  type Fixture,
  REPLY_FIXTURES,
  REQUEST_FIXTURES,
} from "./fixtures.test.data.js";
import type { Reply, Request } from "./messages.js";
import { parseReplyLine } from "./parse-reply.js";
import { parseRequestLine } from "./parse-request.js";
import type { PeerFrame } from "./peer.js";
import {
  bytesOf,
  concatBytes,
  decodeInPieces,
  encodeRequestOrPeer,
  type Pushable,
  splitPoints,
  utf8,
} from "./testing.test.data.js";

const NEWLINE = utf8("\n");

/** Errors reduced to the fields the tables pin down; the message is checked separately. */
function shape(value: object): object {
  if (!isDecodeError(value)) return value;
  expect(value.message).not.toMatch(/[\n\r]/);
  expect(value.message.length).toBeGreaterThan(0);
  return { kind: value.kind, code: value.code, op: value.op, key: value.key, id: value.id };
}

/** Decodes `bytes` whole, in two pieces at every split point, and one byte at a time. */
function expectEveryChunking(
  newDecoder: () => Pushable<object>,
  bytes: Uint8Array,
  expected: object[],
): void {
  expect(newDecoder().push(bytes).map(shape)).toStrictEqual(expected);
  for (const cut of splitPoints(bytes.length)) {
    expect(decodeInPieces(newDecoder(), bytes, [cut]).map(shape), `split at ${cut}`).toStrictEqual(expected);
  }
  const everyByte = Array.from({ length: bytes.length }, (_, i) => i);
  expect(decodeInPieces(newDecoder(), bytes, everyByte).map(shape)).toStrictEqual(expected);
}

const title = (line: string | Uint8Array) => {
  const text = typeof line === "string" ? JSON.stringify(line) : `bytes ${Buffer.from(line).toString("hex")}`;
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
};

// The framing strips one "\r" before the "\n"; the line parsers see the rest.
const stripCr = (line: string) => (line.endsWith("\r") ? line.slice(0, -1) : line);

function describeValidLines<T extends object>(
  fixtures: readonly Fixture<T>[],
  newDecoder: () => Pushable<object>,
  parse: (line: string) => object,
  encode: (value: T) => string,
): void {
  it.each(fixtures.map((f) => [title(f.line), f] as const))("%s", (_, fixture) => {
    expect(parse(fixture.line)).toStrictEqual(fixture.value);
    expect(encode(fixture.value)).toBe(`${fixture.encoded ?? fixture.line}\n`);
    expectEveryChunking(newDecoder, utf8(`${fixture.line}\n`), [fixture.value]);
    expectEveryChunking(newDecoder, utf8(`${fixture.line}\r\n`), [fixture.value]);
  });

  it("decodes all of them as one stream, split anywhere", () => {
    const stream = utf8(fixtures.map((f) => `${f.line}\n`).join(""));
    const expected = fixtures.map((f) => f.value);
    for (const cut of splitPoints(stream.length)) {
      expect(decodeInPieces(newDecoder(), stream, [cut])).toStrictEqual(expected);
    }
  });
}

function describeBadLines(
  lines: readonly BadLine[],
  newDecoder: () => Pushable<object>,
  parse: (line: string) => object,
): void {
  it.each(lines.map((l) => [title(l.line), l] as const))("%s", (_, bad) => {
    const expected = errorShape(bad);
    // Framing errors (LINE_TOO_LONG, BAD_ENCODING) only exist at the byte level.
    if (typeof bad.line === "string" && bad.code !== "LINE_TOO_LONG") {
      expect(shape(parse(stripCr(bad.line)))).toStrictEqual(expected);
    }
    expectEveryChunking(newDecoder, concatBytes([bytesOf(bad.line), NEWLINE]), [expected]);
  });

  it("stays in sync: every bad line, each followed by a good one, as one stream split anywhere", () => {
    const good = utf8("P ok\n");
    const stream = concatBytes(lines.flatMap((l) => [bytesOf(l.line), NEWLINE, good]));
    const okValue = parse("P ok");
    const expected = lines.flatMap((l) => [errorShape(l), okValue]);
    const cuts = [0, 1, 1000, 65_536, 65_537, 100_000, 131_073, stream.length - 5];
    for (const cut of cuts) {
      expect(decodeInPieces(newDecoder(), stream, [cut]).map(shape)).toStrictEqual(expected);
    }
  });
}

describe("request fixtures", () => {
  describeValidLines<Request | PeerFrame>(
    REQUEST_FIXTURES,
    () => new RequestDecoder(),
    (line) => parseRequestLine(line),
    encodeRequestOrPeer,
  );
});

describe("reply fixtures", () => {
  describeValidLines<Reply>(
    REPLY_FIXTURES,
    () => new ReplyDecoder(),
    (line) => parseReplyLine(line),
    (value) => encodeReply(value),
  );
});

describe("bad request lines", () => {
  describeBadLines(
    BAD_REQUESTS,
    () => new RequestDecoder(),
    (line) => parseRequestLine(line),
  );
});

describe("bad reply lines", () => {
  describeBadLines(
    BAD_REPLIES,
    () => new ReplyDecoder(),
    (line) => parseReplyLine(line),
  );
});
