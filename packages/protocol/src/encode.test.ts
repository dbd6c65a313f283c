import { describe, expect, it } from "vitest";
import { toErrorReply } from "./decode-error.js";
import { encodePeer, encodeReply, encodeRequest } from "./encode.js";
import type { ErrorCode, Reply, Request } from "./messages.js";
import { parseReplyLine } from "./parse-reply.js";
import { parseRequestLine } from "./parse-request.js";
import type { PeerFrame } from "./peer.js";
import { MAX_EPOCH, MAX_TOKEN } from "./token.js";

describe("encoders refuse values that would make a bad or ambiguous line", () => {
  const badRequests: Array<[string, Request, ErrorConstructor]> = [
    ["key with a space", { op: "R", key: "a b", token: 1n }, TypeError],
    ["key with a newline", { op: "R", key: "k\nI", token: 1n }, TypeError],
    ["empty key", { op: "Y", key: "", leaseMs: 1 }, TypeError],
    ["key over the limit", { op: "R", key: "x".repeat(1025), token: 1n }, RangeError],
    ["token over u64", { op: "R", key: "k", token: MAX_TOKEN + 1n }, RangeError],
    ["negative token", { op: "X", key: "k", token: -1n, leaseMs: 1 }, RangeError],
    ["fractional ms", { op: "A", key: "k", leaseMs: 1.5, waitMs: 0 }, RangeError],
    ["negative wait", { op: "A", key: "k", leaseMs: 1, waitMs: -1 }, RangeError],
    ["id `-`", { op: "A", key: "k", leaseMs: 1, waitMs: 0, id: "-" }, TypeError],
    ["id with a space", { op: "Y", key: "k", leaseMs: 1, id: "a b" }, TypeError],
    ["nonce with a newline", { op: "P", nonce: "a\nb" }, TypeError],
    ["secret with a space", { op: "H", secret: "a b" }, TypeError],
    ["unknown op", { op: "Z" } as unknown as Request, TypeError],
  ];
  it.each(badRequests)("request: %s", (_, request, errorType) => {
    expect(() => encodeRequest(request)).toThrow(errorType);
  });

  const badReplies: Array<[string, Reply]> = [
    ["E with an unknown code", { kind: "E", op: "A", key: "k", code: "NOPE" as ErrorCode, message: "" }],
    ["E with a bad op", { kind: "E", op: "Z" as "A", key: "k", code: "INTERNAL", message: "" }],
    ["M with a bad address", { kind: "M", op: "A", key: "k", address: "nowhere" }],
    ["I with a space in a value", { kind: "I", fields: new Map([["a", "b c"]]) }],
    ["I with = in a name", { kind: "I", fields: new Map([["a=b", "c"]]) }],
  ];
  it.each(badReplies)("reply: %s", (_, reply) => {
    expect(() => encodeReply(reply)).toThrow(TypeError);
  });

  it("peer frames: a bad role or address, an epoch beyond the token layout", () => {
    const join = { peer: "J", node: "10.0.0.1:7420", role: "active", epoch: 1n, highest: 1n } as const;
    expect(() => encodePeer({ ...join, role: "leader" as "active" })).toThrow(TypeError);
    expect(() => encodePeer({ ...join, node: "10.0.0.1" })).toThrow(TypeError);
    expect(() => encodePeer({ ...join, epoch: MAX_TOKEN + 1n })).toThrow(RangeError);
    expect(() => encodePeer({ ...join, highest: MAX_EPOCH + 1n })).toThrow(RangeError);
    expect(() => encodePeer({ peer: "P", seq: 1, epoch: MAX_EPOCH + 1n })).toThrow(RangeError);
    expect(() => encodePeer({ peer: "G", seq: 1, key: "k", token: 1n, leaseMs: -1 })).toThrow(RangeError);
    expect(() => encodePeer({ peer: "Z" } as unknown as PeerFrame)).toThrow(TypeError);
  });

  it("peer handshake frames: nonces and proofs are exactly 64 lowercase hex digits", () => {
    const hex = "a".repeat(64);
    expect(encodePeer({ peer: "N", node: "10.0.0.1:7420", nonce: hex })).toBe(`!N 10.0.0.1:7420 ${hex}\n`);
    expect(() => encodePeer({ peer: "N", node: "10.0.0.1", nonce: hex })).toThrow(TypeError);
    expect(() => encodePeer({ peer: "C", nonce: "A".repeat(64) })).toThrow(TypeError);
    expect(() => encodePeer({ peer: "C", nonce: `${hex}\n!O 1 1` })).toThrow(TypeError);
    expect(() => encodePeer({ peer: "V", proof: hex.slice(1) })).toThrow(TypeError);
    // A proof never shows up in an error message: it would be replayable from a log.
    expect(() => encodePeer({ peer: "V", proof: `${hex} ` })).toThrow(/^invalid proof: 64 lowercase/);
  });
});

describe("decode errors of peer lines", () => {
  it("are marked as peer lines, so a server can refuse them as peer frames", () => {
    for (const line of ["!B 10.0.0.5:7420 standby 18446744073709551615 - 1", "!Z 1", "!", "!NN x"])
      expect(parseRequestLine(line)).toMatchObject({ kind: "error", peer: true });
    for (const line of ["Z", "A k -5 0", "H"]) expect(parseRequestLine(line)).not.toHaveProperty("peer");
  });
});

describe("E replies", () => {
  it("echo a decode error as the server's answer to the bad line", () => {
    const error = parseRequestLine("A orders:42 -5 0 job-1");
    if (!("kind" in error)) throw new Error("expected a decode error");
    expect(encodeReply(toErrorReply(error))).toBe(
      "E A orders:42 BAD_DURATION job-1 lease must be decimal seconds with at most 3 fraction digits\n",
    );
    const unknown = parseRequestLine("Z");
    if (!("kind" in unknown)) throw new Error("expected a decode error");
    expect(encodeReply(toErrorReply(unknown))).toBe('E ? - BAD_SYNTAX - unknown verb "Z"\n');
  });

  it("cannot smuggle a second line in through the message", () => {
    const line = encodeReply({ kind: "E", op: "A", key: "k", code: "INTERNAL", message: "oops\nA k 1\r" });
    expect(line).toBe("E A k INTERNAL - oops A k 1 \n");
    expect(line.indexOf("\n")).toBe(line.length - 1);
  });

  it("cut very long messages so the line stays short, without splitting a surrogate pair", () => {
    const line = encodeReply({
      kind: "E",
      op: "?",
      key: "-",
      code: "INTERNAL",
      message: `${"x".repeat(1023)}😀tail`,
    });
    const reply = parseReplyLine(line.slice(0, -1));
    expect(reply).toMatchObject({ kind: "E", message: "x".repeat(1023) });
  });

  it("show control characters in a received message as spaces", () => {
    expect(parseReplyLine("E ? - INTERNAL - a\tb")).toMatchObject({ message: "a b" });
  });
});
