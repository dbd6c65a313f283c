import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RequestDecoder } from "./decoders.js";
import { LineDecoder } from "./line-decoder.js";
import { concatBytes, decodeInPieces, splitPoints, utf8 } from "./testing.test.data.js";

const small = { maxLineBytes: 16, maxKeyBytes: 8 };
const tooLong = (max: number) => ({
  kind: "error",
  code: "LINE_TOO_LONG",
  message: `the line is over ${max} bytes; it was discarded`,
  op: "?",
  key: "-",
});

/** Every way of cutting `bytes` in two, plus byte by byte. */
function everyChunking(bytes: Uint8Array): number[][] {
  return [
    ...splitPoints(bytes.length).map((cut) => [cut]),
    Array.from({ length: bytes.length }, (_, i) => i),
  ];
}

describe("LineDecoder", () => {
  it("skips empty lines and strips exactly one \\r before the \\n", () => {
    const bytes = utf8("\n\r\na\r\n\n\r\r\nb\rc\nd\n");
    for (const cuts of everyChunking(bytes)) {
      expect(decodeInPieces(new LineDecoder(), bytes, cuts)).toStrictEqual(["a", "\r", "b\rc", "d"]);
    }
  });

  it("accepts a line of exactly maxLineBytes, counting the \\n and any \\r", () => {
    // 16 bytes each with the "\n": ASCII, ASCII with "\r", 2-, 3- and 4-byte characters.
    const lines = [
      "x".repeat(15),
      `${"x".repeat(14)}\r`,
      `${"é".repeat(7)}x`,
      "€".repeat(5),
      `${"😀".repeat(3)}abc`,
    ];
    for (const line of lines) {
      const bytes = utf8(`${line}\n`);
      expect(bytes.length).toBe(16);
      for (const cuts of everyChunking(bytes)) {
        expect(decodeInPieces(new LineDecoder(small), bytes, cuts)).toStrictEqual([line.replace(/\r$/, "")]);
      }
    }
  });

  it("reports LINE_TOO_LONG once for a line one byte over, and decodes the next line", () => {
    const lines = ["x".repeat(16), `${"x".repeat(15)}\r`, "é".repeat(8), `${"€".repeat(5)}x`, "😀".repeat(4)];
    for (const line of lines) {
      const bytes = utf8(`${line}\nok\n`);
      expect(bytes.length).toBe(20);
      for (const cuts of everyChunking(bytes)) {
        expect(decodeInPieces(new LineDecoder(small), bytes, cuts)).toStrictEqual([tooLong(16), "ok"]);
      }
    }
  });

  it("reports a very long line once, as soon as it is known, and buffers none of it", () => {
    const decoder = new LineDecoder(small);
    const out = [];
    for (let i = 0; i < 1000; i++) {
      out.push(...decoder.push(utf8("y")));
      expect(decoder.bufferedBytes).toBeLessThan(16);
    }
    expect(out).toStrictEqual([tooLong(16)]);
    expect(decoder.push(utf8("yyy\nnext\n"))).toStrictEqual(["next"]);
    expect(decoder.bufferedBytes).toBe(0);
  });

  it("holds an unfinished line until its \\n, and never more than maxLineBytes - 1 bytes", () => {
    const decoder = new LineDecoder(small);
    expect(decoder.push(utf8("a\nbcd"))).toStrictEqual(["a"]);
    expect(decoder.bufferedBytes).toBe(3);
    expect(decoder.push(utf8("e".repeat(11)))).toStrictEqual([]);
    expect(decoder.bufferedBytes).toBe(14);
    expect(decoder.push(utf8("f"))).toStrictEqual([]);
    expect(decoder.bufferedBytes).toBe(15);
    expect(decoder.push(utf8("\n"))).toStrictEqual([`bcd${"e".repeat(11)}f`]);
    expect(decoder.bufferedBytes).toBe(0);
  });

  it("copies what it keeps, so the caller may reuse its chunk", () => {
    const decoder = new LineDecoder();
    const chunk = utf8("abc");
    decoder.push(chunk);
    chunk.fill(0x7a);
    expect(decoder.push(utf8("\n"))).toStrictEqual(["abc"]);
  });

  it("refuses only the invalid line when a chunk holds several", () => {
    const bytes = concatBytes([utf8("one\n"), new Uint8Array([0x74, 0xc3, 0x28, 0x0a]), utf8("three\r\n")]);
    expect(new LineDecoder().push(bytes)).toStrictEqual([
      "one",
      { kind: "error", code: "BAD_ENCODING", message: "the line is not valid UTF-8", op: "?", key: "-" },
      "three",
    ]);
  });

  it("keeps a byte-order mark as text instead of dropping it", () => {
    expect(new LineDecoder().push(utf8("\ufeffA\n"))).toStrictEqual(["\ufeffA"]);
  });

  it("takes Node Buffers and plain Uint8Arrays alike", () => {
    expect(new LineDecoder().push(Buffer.from("a\nb\n"))).toStrictEqual(["a", "b"]);
    expect(new LineDecoder().push(new Uint8Array(0))).toStrictEqual([]);
  });

  it("decodes Buffers (short ASCII regions take a fast path) exactly as plain Uint8Arrays", () => {
    // Mostly ASCII with newlines, some high and invalid bytes, lines around the limit.
    const byte = fc.oneof(
      { weight: 8, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
      { weight: 2, arbitrary: fc.constant(0x0a) },
      { weight: 1, arbitrary: fc.integer({ min: 0, max: 255 }) },
    );
    fc.assert(
      fc.property(fc.array(byte, { maxLength: 1200 }), fc.array(fc.nat(1200)), (values, cuts) => {
        const bytes = new Uint8Array(values);
        const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
        const limits = { maxLineBytes: 64, maxKeyBytes: 32 };
        const plain = decodeInPieces(new RequestDecoder(limits), bytes, points);
        // A Buffer's pieces are Buffers too.
        const asBuffers = decodeInPieces(new RequestDecoder(limits), Buffer.from(bytes), points);
        expect(asBuffers).toStrictEqual(plain);
      }),
      { numRuns: 300 },
    );
  });

  it("rejects limits no line could meet", () => {
    expect(() => new LineDecoder({ maxLineBytes: 1 })).toThrow(RangeError);
    expect(() => new LineDecoder({ maxLineBytes: 10.5 })).toThrow(RangeError);
    expect(() => new RequestDecoder({ maxLineBytes: 100, maxKeyBytes: 0 })).toThrow(RangeError);
  });
});

describe("RequestDecoder with small limits", () => {
  it("applies maxKeyBytes and maxLineBytes from its limits", () => {
    const decoder = new RequestDecoder({ maxLineBytes: 32, maxKeyBytes: 4 });
    const out = decoder.push(utf8(`R abcd 1\nR abcde 1\nP ${"x".repeat(30)}\n`));
    expect(out.map((frame) => ("code" in frame ? frame.code : frame))).toStrictEqual([
      { op: "R", key: "abcd", token: 1n },
      "KEY_TOO_LONG",
      "LINE_TOO_LONG",
    ]);
  });
});
