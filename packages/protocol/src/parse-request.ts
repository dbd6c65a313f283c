import { type DecodeError, isDecodeError } from "./decode-error.js";
import { fastRequest } from "./fast-path.js";
import { FieldReader, splitFields, unknownVerb, verbOf, withId } from "./field-reader.js";
import { isValidNonce, isValidSecret } from "./fields.js";
import { DEFAULT_LIMITS, type ProtocolLimits } from "./limits.js";
import type {
  AcquireRequest,
  BundleRequest,
  CancelRequest,
  ExtendRequest,
  HelloRequest,
  ModeAcquireRequest,
  ModeTryAcquireRequest,
  PingRequest,
  ReleaseRequest,
  Request,
  RequestOp,
  TryAcquireRequest,
} from "./messages.js";
import { MAX_BUNDLE_LINE_KEYS } from "./messages.js";
import { parsePeerLine } from "./parse-peer.js";
import type { PeerFrame } from "./peer.js";
import { parseWatch } from "./watch.js";

/**
 * Parses one request line (without its `\n`; the framing strips a trailing `\r`) into a request,
 * a peer frame (lines starting with `!`), or the error to answer it with. Never throws. The line
 * length is the framing's business (LineDecoder); this checks the fields and the key limit.
 */
export function parseRequestLine(
  line: string,
  limits: ProtocolLimits = DEFAULT_LIMITS,
): Request | PeerFrame | DecodeError {
  return fastRequest(line, limits.maxKeyBytes) ?? parseRequestFields(line, limits);
}

/** The general request parser: every verb, peer frames, every error. `parseRequestLine` tries the fast path first. */
export function parseRequestFields(
  line: string,
  limits: ProtocolLimits = DEFAULT_LIMITS,
): Request | PeerFrame | DecodeError {
  const verb = verbOf(line);
  switch (verb) {
    case "A":
      return parseAcquire(reader(line, "A", 6, limits));
    case "Y":
      return parseTryAcquire(reader(line, "Y", 5, limits));
    case "Q":
      return parseModeAcquire(reader(line, "Q", 7, limits));
    case "W":
      return parseModeTryAcquire(reader(line, "W", 6, limits));
    case "R":
      return parseRelease(reader(line, "R", 5, limits));
    case "X":
      return parseExtend(reader(line, "X", 6, limits));
    case "C":
      return parseCancel(reader(line, "C", 4, limits));
    case "P":
      return parsePing(reader(line, "P", 3, limits));
    case "H":
      return parseHello(reader(line, "H", 3, limits));
    case "I":
      return reader(line, "I", 2, limits).expect(1, 1, "I") ?? { op: "I" };
    case "K":
      return reader(line, "K", 2, limits).expect(1, 1, "K") ?? { op: "K" };
    case "O":
    case "U":
      return parseWatch(reader(line, verb, 3, limits), verb);
    case "B":
      return parseBundle(reader(line, "B", 5 + MAX_BUNDLE_LINE_KEYS, limits));
  }
  if (verb.charCodeAt(0) === 0x21) {
    const frame = verb.length === 2 ? parsePeerLine(line, verb, limits) : unknownVerb(verb);
    return isDecodeError(frame) ? { ...frame, peer: true } : frame;
  }
  return unknownVerb(verb);
}

// One more field than the longest form, so that a surplus field shows up as a wrong count.
function reader(line: string, op: RequestOp, maxFields: number, limits: ProtocolLimits): FieldReader {
  return new FieldReader(splitFields(line, maxFields), op, limits.maxKeyBytes, true);
}

function parseAcquire(r: FieldReader): AcquireRequest | DecodeError {
  const wrongCount = r.expect(4, 5, "A <key> <lease> <wait> [<id>]", 1);
  if (wrongCount) return wrongCount;
  const key = r.key(1);
  const leaseMs = r.seconds(2, "lease");
  const waitMs = r.seconds(3, "wait");
  return r.result(withId<AcquireRequest>({ op: "A", key, leaseMs, waitMs }, r.id(4)));
}

function parseTryAcquire(r: FieldReader): TryAcquireRequest | DecodeError {
  const wrongCount = r.expect(3, 4, "Y <key> <lease> [<id>]", 1);
  if (wrongCount) return wrongCount;
  const key = r.key(1);
  const leaseMs = r.seconds(2, "lease");
  return r.result(withId<TryAcquireRequest>({ op: "Y", key, leaseMs }, r.id(3)));
}

function parseModeAcquire(r: FieldReader): ModeAcquireRequest | DecodeError {
  const wrongCount = r.expect(6, 6, "Q <key> <mode> <lease> <wait> <id>", 1);
  if (wrongCount) return wrongCount;
  const key = r.key(1);
  const id = r.id(5) as string;
  const mode = r.lockMode(2);
  const leaseMs = r.seconds(3, "lease");
  const waitMs = r.seconds(4, "wait");
  return r.result<ModeAcquireRequest>({ op: "Q", key, mode, leaseMs, waitMs, id });
}

function parseModeTryAcquire(r: FieldReader): ModeTryAcquireRequest | DecodeError {
  const wrongCount = r.expect(5, 5, "W <key> <mode> <lease> <id>", 1);
  if (wrongCount) return wrongCount;
  const key = r.key(1);
  const id = r.id(4) as string;
  const mode = r.lockMode(2);
  const leaseMs = r.seconds(3, "lease");
  return r.result<ModeTryAcquireRequest>({ op: "W", key, mode, leaseMs, id });
}

function parseRelease(r: FieldReader): ReleaseRequest | DecodeError {
  const wrongCount = r.expect(3, 4, "R <key> <token> [<id>]", 1);
  if (wrongCount) return wrongCount;
  const key = r.key(1);
  const token = r.token(2);
  return r.result(withId<ReleaseRequest>({ op: "R", key, token }, r.id(3)));
}

function parseExtend(r: FieldReader): ExtendRequest | DecodeError {
  const wrongCount = r.expect(4, 5, "X <key> <token> <lease> [<id>]", 1);
  if (wrongCount) return wrongCount;
  const key = r.key(1);
  const token = r.token(2);
  const leaseMs = r.seconds(3, "lease");
  return r.result(withId<ExtendRequest>({ op: "X", key, token, leaseMs }, r.id(4)));
}

function parseCancel(r: FieldReader): CancelRequest | DecodeError {
  const wrongCount = r.expect(3, 3, "C <key> <id>", 1);
  if (wrongCount) return wrongCount;
  const key = r.key(1);
  return r.result<CancelRequest>({ op: "C", key, id: r.id(2) as string });
}

function parseBundle(r: FieldReader): BundleRequest | DecodeError {
  const usage = "B <key> <lease> <wait> <id> [<key> ...]";
  const wrongCount = r.expect(5, 4 + MAX_BUNDLE_LINE_KEYS, usage, 1);
  if (wrongCount) return wrongCount;
  const keys = [""];
  for (let i = 5; i < r.fields.length; i++) keys.push(r.key(i));
  // The first key last: errors echo the last valid key read, and every reply names the first.
  keys[0] = r.key(1);
  const leaseMs = r.seconds(2, "lease");
  const waitMs = r.seconds(3, "wait");
  const id = r.id(4) as string;
  return r.result<BundleRequest>({ op: "B", keys, leaseMs, waitMs, id });
}

function parsePing(r: FieldReader): PingRequest | DecodeError {
  const wrongCount = r.expect(1, 2, "P [<nonce>]");
  if (wrongCount) return wrongCount;
  if (r.fields.length === 1) return { op: "P" };
  return r.result<PingRequest>({ op: "P", nonce: r.argument(1, isValidNonce, "the nonce") });
}

function parseHello(r: FieldReader): HelloRequest | DecodeError {
  const wrongCount = r.expect(2, 2, "H <secret>");
  if (wrongCount) return wrongCount;
  return r.result<HelloRequest>({ op: "H", secret: r.argument(1, isValidSecret, "the secret") });
}
