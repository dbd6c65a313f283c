import { formatSafeInteger } from "./decimal.js";
import { formatSeconds } from "./duration.js";
import { addressText, idSuffix, keyText, nonceSuffix, peerHexText, secretText } from "./encode-fields.js";
import { isRequestOp, isValidInfoName, isValidInfoValue, toMessageText } from "./fields.js";
import { KEY_SLOTS } from "./key-slot.js";
import { DEFAULT_LIMITS, type ProtocolLimits } from "./limits.js";
import { formatLockMode, formatSlot } from "./lock-mode.js";
import { ERROR_CODES, MAX_BUNDLE_LINE_KEYS, type Reply, type Request } from "./messages.js";
import type { NodeRole, PeerFrame, SharedHold } from "./peer.js";
import { isValidClusterName } from "./slot-map.js";
import { formatToken, isValidEpoch, MAX_EPOCH } from "./token.js";
import { encodeKeyState } from "./watch.js";

/** The id field of a request or reply that must carry one. */
function requiredId(id: string | undefined): string {
  if (id === undefined) throw new TypeError("this message needs a request id");
  return idSuffix(id);
}

/**
 * Encoders return one complete line, `\n` included. They throw a TypeError or RangeError rather than
 * emit a line the other side would refuse or misread; `limits` only bounds the key.
 */

export function encodeRequest(request: Request, limits: ProtocolLimits = DEFAULT_LIMITS): string {
  switch (request.op) {
    case "A": {
      const { key, leaseMs, waitMs, id } = request;
      return `A ${keyText(key, limits)} ${formatSeconds(leaseMs)} ${formatSeconds(waitMs)}${idSuffix(id)}\n`;
    }
    case "Y":
      return `Y ${keyText(request.key, limits)} ${formatSeconds(request.leaseMs)}${idSuffix(request.id)}\n`;
    case "Q": {
      const { key, mode, leaseMs, waitMs, id } = request;
      return `Q ${keyText(key, limits)} ${formatLockMode(mode)} ${formatSeconds(leaseMs)} ${formatSeconds(waitMs)}${requiredId(id)}\n`;
    }
    case "W": {
      const { key, mode, leaseMs, id } = request;
      return `W ${keyText(key, limits)} ${formatLockMode(mode)} ${formatSeconds(leaseMs)}${requiredId(id)}\n`;
    }
    case "R":
      return `R ${keyText(request.key, limits)} ${formatToken(request.token)}${idSuffix(request.id)}\n`;
    case "X": {
      const { key, token, leaseMs, id } = request;
      return `X ${keyText(key, limits)} ${formatToken(token)} ${formatSeconds(leaseMs)}${idSuffix(id)}\n`;
    }
    case "C":
      return `C ${keyText(request.key, limits)}${idSuffix(request.id)}\n`;
    case "P":
      return `P${nonceSuffix(request.nonce)}\n`;
    case "H":
      return `H ${secretText(request.secret)}\n`;
    case "I":
      return "I\n";
    case "K":
      return "K\n";
    case "O":
    case "U":
      return `${request.op} ${keyText(request.key, limits)}\n`;
    case "B": {
      const { keys, leaseMs, waitMs, id } = request;
      if (keys.length === 0 || keys.length > MAX_BUNDLE_LINE_KEYS)
        throw new RangeError(`a bundle has 1 to ${MAX_BUNDLE_LINE_KEYS} keys, got ${keys.length}`);
      const rest = keys
        .slice(1)
        .map((key) => ` ${keyText(key, limits)}`)
        .join("");
      return `B ${keyText(keys[0]!, limits)} ${formatSeconds(leaseMs)} ${formatSeconds(waitMs)}${requiredId(id)}${rest}\n`;
    }
  }
  return unknownKind("request op", request);
}

export function encodeReply(reply: Reply, limits: ProtocolLimits = DEFAULT_LIMITS): string {
  switch (reply.kind) {
    case "A":
    case "Y":
      return `${reply.kind} ${keyText(reply.key, limits)} ${formatToken(reply.token)}${idSuffix(reply.id)}\n`;
    case "B":
      return `B ${keyText(reply.key, limits)} ${formatToken(reply.token)}${requiredId(reply.id)}\n`;
    case "Q":
    case "W": {
      const { kind, key, token, slot, id } = reply;
      return `${kind} ${keyText(key, limits)} ${formatToken(token)} ${formatSlot(slot)}${requiredId(id)}\n`;
    }
    case "T":
    case "N":
      return `${reply.kind} ${keyText(reply.key, limits)}${idSuffix(reply.id)}\n`;
    case "R":
      return `R ${keyText(reply.key, limits)} ${reply.released ? "1" : "0"}\n`;
    case "X":
      return `X ${keyText(reply.key, limits)} ${reply.extended ? "1" : "0"}\n`;
    case "C":
      return `C ${keyText(reply.key, limits)} ${reply.cancelled ? "1" : "0"}\n`;
    case "U":
      return `U ${keyText(reply.key, limits)} ${reply.watched ? "1" : "0"}\n`;
    case "O":
      return encodeKeyState(reply, limits);
    case "P":
      return `P${nonceSuffix(reply.nonce)}\n`;
    case "H":
      return "H\n";
    case "I":
      return `I${infoFieldsText(reply.fields)}\n`;
    case "M": {
      const { op, key, address, id } = reply;
      return `M ${opText(op)} ${keyText(key, limits)} ${addressText(address)}${idSuffix(id)}\n`;
    }
    case "K":
      return reply.map === undefined ? "K 0\n" : `K ${reply.map.version} ${reply.map.toFields().join(" ")}\n`;
    case "S": {
      const { op, key, slot, version, cluster, address, id } = reply;
      if (!Number.isInteger(slot) || slot < 0 || slot >= KEY_SLOTS)
        throw new RangeError(`slot ${slot} out of range`);
      if (!isValidClusterName(cluster)) throw new TypeError(`bad cluster name ${JSON.stringify(cluster)}`);
      return `S ${opText(op)} ${keyText(key, limits)} ${slot} ${formatToken(version)} ${cluster} ${addressText(address)}${idSuffix(id)}\n`;
    }
    case "E": {
      const { op, key, code, id, message } = reply;
      if (!Object.hasOwn(ERROR_CODES, code)) throw new TypeError(`unknown error code ${String(code)}`);
      const idField = id === undefined ? " -" : idSuffix(id);
      const text = toMessageText(truncate(message, MAX_MESSAGE_LENGTH));
      // An empty message leaves no trailing space; the decoder accepts both forms.
      const head = `E ${op === "?" ? "?" : opText(op)} ${keyText(key, limits)} ${code}${idField}`;
      return text === "" ? `${head}\n` : `${head} ${text}\n`;
    }
  }
  return unknownKind("reply kind", reply);
}

export function encodePeer(frame: PeerFrame, limits: ProtocolLimits = DEFAULT_LIMITS): string {
  switch (frame.peer) {
    case "N":
      return `!N ${addressText(frame.node)} ${peerHexText(frame.nonce, "nonce")}${versionSuffix(frame.version)}\n`;
    case "C":
      return `!C ${peerHexText(frame.nonce, "nonce")}${versionSuffix(frame.version)}\n`;
    case "V":
      return `!V ${peerHexText(frame.proof, "proof")}\n`;
    case "J": {
      const { node, role, epoch, highest } = frame;
      return `!J ${addressText(node)} ${roleText(role)} ${epochText(epoch)} ${epochText(highest)}\n`;
    }
    case "B": {
      const { node, role, epoch, active, highest, synced } = frame;
      const activeText = active === undefined ? "-" : addressText(active);
      const syncedText = synced === undefined ? "" : synced ? " 1" : " 0";
      return `!B ${addressText(node)} ${roleText(role)} ${epochText(epoch)} ${activeText} ${epochText(highest)}${syncedText}\n`;
    }
    case "S": {
      return `!S ${epochText(frame.epoch)} ${formatSafeInteger(frame.seq, "seq")}\n`;
    }
    case "h": {
      const { key, token, remainingMs, id } = frame;
      const remaining = formatSafeInteger(remainingMs, "remainingMs");
      return `!h ${keyText(key, limits)} ${formatToken(token)} ${remaining}${idSuffix(id)}\n`;
    }
    case "q": {
      const { key, token, remainingMs, id } = frame;
      const remaining = formatSafeInteger(remainingMs, "remainingMs");
      return `!q ${keyText(key, limits)} ${formatToken(token)} ${remaining} ${sharedHoldText(frame)}${id === undefined ? " -" : idSuffix(id)}\n`;
    }
    case "s":
      return `!s ${formatSafeInteger(frame.seq, "seq")} ${formatSafeInteger(frame.count, "count")}\n`;
    case "K":
      return `!${frame.peer} ${formatSafeInteger(frame.seq, "seq")}\n`;
    case "G": {
      const { seq, key, token, leaseMs, id } = frame;
      const lease = formatSafeInteger(leaseMs, "leaseMs");
      return `!G ${formatSafeInteger(seq, "seq")} ${keyText(key, limits)} ${formatToken(token)} ${lease}${idSuffix(id)}\n`;
    }
    case "Q": {
      const { seq, key, token, leaseMs, id } = frame;
      const lease = formatSafeInteger(leaseMs, "leaseMs");
      return `!Q ${formatSafeInteger(seq, "seq")} ${keyText(key, limits)} ${formatToken(token)} ${lease} ${sharedHoldText(frame)}${id === undefined ? " -" : idSuffix(id)}\n`;
    }
    case "F":
      return `!F ${formatSafeInteger(frame.seq, "seq")} ${keyText(frame.key, limits)} ${formatToken(frame.token)}\n`;
    case "X": {
      const { seq, key, token, leaseMs } = frame;
      const lease = formatSafeInteger(leaseMs, "leaseMs");
      return `!X ${formatSafeInteger(seq, "seq")} ${keyText(key, limits)} ${formatToken(token)} ${lease}\n`;
    }
    case "P":
    case "O":
      return `!${frame.peer} ${formatSafeInteger(frame.seq, "seq")} ${epochText(frame.epoch)}\n`;
  }
  return unknownKind("peer frame", frame);
}

// Far below any sane line limit even at 4 bytes a character, so an error reply always gets through.
const MAX_MESSAGE_LENGTH = 1024;

/** Cuts `text` to `maxLength` UTF-16 units without splitting a surrogate pair. */
function truncate(text: string, maxLength: number): string {
  if (text.length <= maxLength) return text;
  const last = text.charCodeAt(maxLength - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? maxLength - 1 : maxLength);
}

/** `<mode> <slot>` of `!q`/`!Q`, refusing what the receiver would refuse. */
function sharedHoldText(hold: SharedHold): string {
  const { mode, slot } = hold;
  if (mode.kind === "exclusive") throw new TypeError("an exclusive holder travels as !h or !G");
  if (mode.kind === "shared" ? slot !== undefined : slot === undefined || slot >= mode.limit)
    throw new RangeError("the slot must be undefined for a shared holder and below the limit for a permit");
  return `${formatLockMode(mode)} ${formatSlot(slot)}`;
}

function opText(op: string): string {
  if (!isRequestOp(op)) throw new TypeError(`unknown request op ${JSON.stringify(op)}`);
  return op;
}

/** Epochs are u64s within the token layout's 40 bits; anything else is a programming error. */
function epochText(epoch: bigint): string {
  if (typeof epoch !== "bigint") throw new TypeError(`epoch must be a bigint, got ${typeof epoch}`);
  if (!isValidEpoch(epoch)) throw new RangeError(`epoch ${epoch} is outside 0..${MAX_EPOCH}`);
  return epoch.toString();
}

function roleText(role: NodeRole): string {
  if (role !== "active" && role !== "standby") throw new TypeError(`unknown role ${JSON.stringify(role)}`);
  return role;
}

function infoFieldsText(fields: ReadonlyMap<string, string>): string {
  let text = "";
  for (const [name, value] of fields) {
    if (!isValidInfoName(name) || !isValidInfoValue(value)) {
      throw new TypeError(`invalid info field ${JSON.stringify(name)}=${JSON.stringify(value)}`);
    }
    text += ` ${name}=${value}`;
  }
  return text;
}

// Reached only when the type system was bypassed (casts, plain JavaScript callers).
function unknownKind(what: string, value: never): never {
  throw new TypeError(
    `unknown ${what}: ${JSON.stringify(value, (_, v) => (typeof v === "bigint" ? `${v}` : v))}`,
  );
}

/** ` <version>` for a peer hello or challenge that carries one (a non-negative safe integer). */
function versionSuffix(version: number | undefined): string {
  if (version === undefined) return "";
  if (!Number.isSafeInteger(version) || version < 0)
    throw new TypeError(`bad peer protocol version ${version}`);
  return ` ${version}`;
}
