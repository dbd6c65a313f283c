import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { durationMs, key, peerFrame, reply, request, u64 } from "./arbitraries.test.data.js";
import { ReplyDecoder, RequestDecoder } from "./decoders.js";
import { formatSeconds, parseSeconds } from "./duration.js";
import { encodePeer, encodeReply, encodeRequest } from "./encode.js";
import { validateKey } from "./fields.js";
import { parseReplyLine } from "./parse-reply.js";
import { parseRequestLine } from "./parse-request.js";
import { decodeInPieces, encodeRequestOrPeer, type Pushable, utf8 } from "./testing.test.data.js";
import { formatToken, parseToken } from "./token.js";

describe("round trips of single fields", () => {
  it("tokens, over the whole u64 range", () => {
    fc.assert(
      fc.property(u64, (token) => {
        expect(parseToken(formatToken(token))).toBe(token);
      }),
      { numRuns: 1000 },
    );
  });

  it("durations, over the whole range", () => {
    fc.assert(
      fc.property(durationMs, (ms) => {
        expect(parseSeconds(formatSeconds(ms))).toBe(ms);
      }),
      { numRuns: 1000 },
    );
  });

  it("keys: any valid Unicode text is a valid key", () => {
    fc.assert(
      fc.property(key, (k) => {
        expect(validateKey(k, 1024)).toBeUndefined();
      }),
    );
  });
});

/** Registers the round-trip properties of one message family: encode, then decode, gives it back. */
function describeRoundTrips<T>(
  name: string,
  values: fc.Arbitrary<T>,
  encode: (value: T) => string,
  parse: (line: string) => unknown,
  newDecoder: () => Pushable<unknown>,
): void {
  describe(`round trips of ${name}`, () => {
    it("one at a time, through the line parser and through the byte decoder", () => {
      fc.assert(
        fc.property(values, (value) => {
          const line = encode(value);
          expect(parse(line.slice(0, -1))).toStrictEqual(value);
          expect(newDecoder().push(utf8(line))).toStrictEqual([value]);
        }),
        { numRuns: 300 },
      );
    });

    it("pipelined, cut into random chunks", () => {
      const stream = fc.array(values, { minLength: 1, maxLength: 20 }).chain((batch) => {
        const bytes = utf8(batch.map(encode).join(""));
        const cuts = fc.uniqueArray(fc.integer({ min: 0, max: bytes.length }), { maxLength: 8 });
        return fc.tuple(
          fc.constant(batch),
          fc.constant(bytes),
          cuts.map((c) => c.sort((a, b) => a - b)),
        );
      });
      fc.assert(
        fc.property(stream, ([batch, bytes, cuts]) => {
          expect(decodeInPieces(newDecoder(), bytes, cuts)).toStrictEqual(batch);
        }),
        { numRuns: 100 },
      );
    });
  });
}

describeRoundTrips(
  "requests",
  request,
  (v) => encodeRequest(v),
  (l) => parseRequestLine(l),
  () => new RequestDecoder(),
);
describeRoundTrips(
  "peer frames",
  peerFrame,
  (v) => encodePeer(v),
  (l) => parseRequestLine(l),
  () => new RequestDecoder(),
);
describeRoundTrips(
  "requests and peer frames mixed",
  fc.oneof(request, peerFrame),
  encodeRequestOrPeer,
  (l) => parseRequestLine(l),
  () => new RequestDecoder(),
);
describeRoundTrips(
  "replies",
  reply,
  (v) => encodeReply(v),
  (l) => parseReplyLine(l),
  () => new ReplyDecoder(),
);
