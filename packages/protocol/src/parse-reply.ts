import { type DecodeError, decodeError } from "./decode-error.js";
import { fastReply } from "./fast-path.js";
import { FieldReader, splitFields, unknownVerb, verbOf, withId } from "./field-reader.js";
import { isValidAddress, isValidInfoName, isValidInfoValue, isValidNonce, toMessageText } from "./fields.js";
import { KEY_SLOTS } from "./key-slot.js";
import { DEFAULT_LIMITS, type ProtocolLimits } from "./limits.js";
import {
  type BundleGrantedReply,
  ERROR_CODES,
  type ErrorCode,
  type ErrorReply,
  type GrantedReply,
  type InfoReply,
  type KeyspaceReply,
  type ModeGrantedReply,
  type PongReply,
  type RedirectReply,
  type Reply,
  type RequestOp,
  type SlotRedirectReply,
  type TimedOutReply,
  type TryBusyReply,
  type TryGrantedReply,
} from "./messages.js";
import { isValidClusterName, SlotMap, SlotMapError } from "./slot-map.js";
import { parseToken } from "./token.js";
import { parseKeyState } from "./watch.js";

/**
 * Parses one reply line (without its `\n`) into a reply or a DecodeError. Never throws. A
 * DecodeError's `op` is the request verb the reply answers (`A` for `A`/`T`, `Y` for `Y`/`N`,
 * the verb field of `M`/`E`), so a client can still fail the right request.
 */
export function parseReplyLine(line: string, limits: ProtocolLimits = DEFAULT_LIMITS): Reply | DecodeError {
  return fastReply(line, limits.maxKeyBytes) ?? parseReplyFields(line, limits);
}

/** The general reply parser: every verb, every error. `parseReplyLine` tries the fast path first. */
export function parseReplyFields(line: string, limits: ProtocolLimits = DEFAULT_LIMITS): Reply | DecodeError {
  const verb = verbOf(line);
  switch (verb) {
    case "A":
    case "Y":
      return parseGrant(reader(line, verb, 5, limits), verb);
    case "Q":
    case "W":
      return parseModeGrant(reader(line, verb, 6, limits), verb);
    case "B":
      return parseBundleGrant(reader(line, "B", 5, limits));
    case "T":
    case "N":
      return parseRefusal(reader(line, verb === "T" ? "A" : "Y", 4, limits), verb);
    case "R":
    case "X":
    case "C":
      return parseOutcome(reader(line, verb, 4, limits), verb);
    case "P":
      return parsePong(reader(line, "P", 3, limits));
    case "H":
      return reader(line, "H", 2, limits).expect(1, 1, "H") ?? { kind: "H" };
    case "I":
      return parseInfo(new FieldReader(line.split(" "), "I", limits.maxKeyBytes, true));
    case "M":
      return parseRedirect(reader(line, "?", 6, limits));
    case "K":
      return parseKeyspace(line);
    case "S":
      return parseSlotRedirect(reader(line, "?", 8, limits));
    case "E":
      return parseError(reader(line, "?", 6, limits));
    case "O":
      return parseKeyState(reader(line, "O", 6, limits));
    case "U":
      return parseOutcome(reader(line, "U", 4, limits), "U");
  }
  return unknownVerb(verb);
}

function reader(line: string, op: RequestOp | "?", maxFields: number, limits: ProtocolLimits): FieldReader {
  return new FieldReader(splitFields(line, maxFields), op, limits.maxKeyBytes, true);
}

function parseGrant(r: FieldReader, kind: "A" | "Y"): GrantedReply | TryGrantedReply | DecodeError {
  const wrongCount = r.expect(3, 4, `${kind} <key> <token> [<id>]`, 1);
  if (wrongCount) return wrongCount;
  const key = r.key(1);
  const token = r.token(2);
  return r.result(withId<GrantedReply | TryGrantedReply>({ kind, key, token }, r.id(3)));
}

function parseModeGrant(r: FieldReader, kind: "Q" | "W"): ModeGrantedReply | DecodeError {
  const wrongCount = r.expect(5, 5, `${kind} <key> <token> <slot> <id>`, 1);
  if (wrongCount) return wrongCount;
  const key = r.key(1);
  const id = r.id(4) as string;
  const token = r.token(2);
  const slot = r.slot(3);
  return r.result<ModeGrantedReply>({ kind, key, token, slot, id });
}

function parseBundleGrant(r: FieldReader): BundleGrantedReply | DecodeError {
  const wrongCount = r.expect(4, 4, "B <key> <token> <id>", 1);
  if (wrongCount) return wrongCount;
  const key = r.key(1);
  const id = r.id(3) as string;
  const token = r.token(2);
  return r.result<BundleGrantedReply>({ kind: "B", key, token, id });
}

function parseRefusal(r: FieldReader, kind: "T" | "N"): TimedOutReply | TryBusyReply | DecodeError {
  const wrongCount = r.expect(2, 3, `${kind} <key> [<id>]`, 1);
  if (wrongCount) return wrongCount;
  const key = r.key(1);
  return r.result(withId<TimedOutReply | TryBusyReply>({ kind, key }, r.id(2)));
}

function isFlag(text: string): boolean {
  return text === "0" || text === "1";
}

function parseOutcome(r: FieldReader, kind: "R" | "X" | "C" | "U"): Reply | DecodeError {
  const wrongCount = r.expect(3, 3, `${kind} <key> 0|1`, 1);
  if (wrongCount) return wrongCount;
  const key = r.key(1);
  const done = r.argument(2, isFlag, "the outcome (0 or 1)") === "1";
  if (kind === "R") return r.result<Reply>({ kind, key, released: done });
  if (kind === "X") return r.result<Reply>({ kind, key, extended: done });
  if (kind === "U") return r.result<Reply>({ kind, key, watched: done });
  return r.result<Reply>({ kind, key, cancelled: done });
}

function parsePong(r: FieldReader): PongReply | DecodeError {
  const wrongCount = r.expect(1, 2, "P [<nonce>]");
  if (wrongCount) return wrongCount;
  if (r.fields.length === 1) return { kind: "P" };
  return r.result<PongReply>({ kind: "P", nonce: r.argument(1, isValidNonce, "the nonce") });
}

function parseInfo(r: FieldReader): InfoReply | DecodeError {
  const fields = new Map<string, string>();
  for (let i = 1; i < r.fields.length; i++) {
    const field = r.fields[i]!;
    const equals = field.indexOf("=");
    const name = field.slice(0, equals);
    const value = field.slice(equals + 1);
    if (equals < 0 || !isValidInfoName(name) || !isValidInfoValue(value)) {
      r.fail("BAD_ARGUMENT", "info fields must be <name>=<value>");
    } else if (fields.has(name)) {
      // A Map cannot hold both; dropping one silently could hide a server bug.
      r.fail("BAD_ARGUMENT", `info field ${name} appears twice`);
    }
    fields.set(name, value);
  }
  return r.result<InfoReply>({ kind: "I", fields });
}

function parseRedirect(r: FieldReader): RedirectReply | DecodeError {
  const wrongCount = r.expect(4, 5, "M <verb> <key> <address> [<id>]", 2, 1);
  if (wrongCount) return wrongCount;
  const op = r.op(1, false) as RequestOp;
  const key = r.key(2);
  const address = r.argument(3, isValidAddress, "the address");
  return r.result(withId<RedirectReply>({ kind: "M", op, key, address }, r.id(4)));
}

function parseKeyspace(line: string): KeyspaceReply | DecodeError {
  const fields = line.split(" ");
  const version = parseToken(fields[1] ?? "");
  if (version === undefined)
    return decodeError(
      "BAD_ARGUMENT",
      "expected K <version> [<cluster>=<addresses>|<from>-<to>:<cluster> ...]",
      "K",
    );
  if (version === 0n)
    return fields.length === 2
      ? { kind: "K", map: undefined }
      : decodeError("BAD_SYNTAX", "K 0 has no fields after it", "K");
  try {
    return { kind: "K", map: SlotMap.fromFields(version, fields.slice(2)) };
  } catch (error) {
    if (!(error instanceof SlotMapError)) throw error;
    return decodeError("BAD_ARGUMENT", `the slot map is malformed: ${error.message}`, "K");
  }
}

function parseSlotRedirect(r: FieldReader): SlotRedirectReply | DecodeError {
  const wrongCount = r.expect(7, 8, "S <verb> <key> <slot> <version> <cluster> <address> [<id>]", 2, 1);
  if (wrongCount) return wrongCount;
  const op = r.op(1, false) as RequestOp;
  const key = r.key(2);
  const slot = r.integer(3, "the slot");
  if (slot >= KEY_SLOTS) r.fail("BAD_ARGUMENT", `the slot must be below ${KEY_SLOTS}`);
  const version = r.u64(4, "the slot map version");
  const cluster = r.argument(5, isValidClusterName, "the cluster name");
  const address = r.argument(6, isValidAddress, "the address");
  return r.result(
    withId<SlotRedirectReply>({ kind: "S", op, key, slot, version, cluster, address }, r.id(7)),
  );
}

function isErrorCode(text: string): text is ErrorCode {
  return Object.hasOwn(ERROR_CODES, text);
}

function parseError(r: FieldReader): ErrorReply | DecodeError {
  // The message is the rest of the line and may be empty, with or without the space before it.
  // Control characters in it are shown as spaces, as the encoder sends them, so it round-trips.
  const wrongCount = r.expect(5, 6, "E <verb> <key> <code> <id|-> <message>", 2, 1);
  if (wrongCount) return wrongCount;
  const op = r.op(1, true);
  const key = r.key(2);
  const code = r.argument(3, isErrorCode, "the error code") as ErrorCode;
  const id = r.fields[4] === "-" ? undefined : r.id(4);
  const message = toMessageText(r.fields[5] ?? "");
  return r.result(withId<ErrorReply>({ kind: "E", op, key, code, message }, id));
}
