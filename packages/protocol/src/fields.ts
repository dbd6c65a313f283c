import type { ErrorCode, RequestOp } from "./messages.js";

export { isValidAddress } from "./address.js";

/**
 * Syntax of the text fields (docs/protocol.md, "Field syntax"). These run once or more per frame on
 * the server, so they are char-code loops rather than regular expressions.
 */

const SPACE = 0x20;
const DEL = 0x7f;

/**
 * Validates the UTF-8 byte length of free text that may not contain a space, a control character
 * (U+0000–U+001F, U+007F) or a lone surrogate (which has no UTF-8 form). Returns the byte length,
 * or -1 when a forbidden character is present.
 */
function textByteLength(text: string): number {
  let bytes = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) {
      if (c <= SPACE || c === DEL) return -1;
      bytes += 1;
    } else if (c < 0x800) {
      bytes += 2;
    } else if (c >= 0xd800 && c <= 0xdbff) {
      if (!isLowSurrogate(text.charCodeAt(i + 1))) return -1;
      i++;
      bytes += 4;
    } else if (isLowSurrogate(c)) {
      return -1;
    } else {
      bytes += 3;
    }
  }
  return bytes;
}

/** UTF-8 byte length of `text[start, end)`, which must be well-formed (decoded text always is). */
export function utf8ByteLength(text: string, start = 0, end = text.length): number {
  let bytes = end - start;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    // A surrogate pair is 2 units and 4 bytes, so each surrogate adds one byte over its unit.
    if (c >= 0x80) bytes += c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 1 : 2;
  }
  return bytes;
}

/** Checks a key: BAD_KEY if empty or holding a forbidden character, KEY_TOO_LONG over the limit. */
export function validateKey(key: string, maxKeyBytes: number): ErrorCode | undefined {
  if (key.length === 0) return "BAD_KEY";
  const bytes = textByteLength(key);
  if (bytes < 0) return "BAD_KEY";
  return bytes > maxKeyBytes ? "KEY_TOO_LONG" : undefined;
}

const REQUEST_OPS: ReadonlySet<string> = new Set<RequestOp>([
  "A",
  "Y",
  "Q",
  "W",
  "R",
  "X",
  "C",
  "P",
  "H",
  "I",
  "K",
  "O",
  "U",
  "B",
]);

export function isRequestOp(verb: string): verb is RequestOp {
  return REQUEST_OPS.has(verb);
}

// Per ASCII code: 1 may start an id, 2 may only follow.
const ID_CHARS = new Uint8Array(128);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
  ID_CHARS[c.charCodeAt(0)] = 1;
for (const c of "_.:-") ID_CHARS[c.charCodeAt(0)] = 2;
export const MAX_ID_LENGTH = 64;

/** True for a request id: `[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}` (so `-` is never an id). */
export function isValidId(id: string): boolean {
  const length = id.length;
  if (length === 0 || length > MAX_ID_LENGTH || ID_CHARS[id.charCodeAt(0)] !== 1) return false;
  for (let i = 1; i < length; i++) {
    // Codes >= 128 index past the table and read undefined, which is falsy like 0.
    if (!ID_CHARS[id.charCodeAt(i)]) return false;
  }
  return true;
}

export const MAX_SECRET_LENGTH = 1024;
export const MAX_NONCE_LENGTH = 64;

function isPrintableAscii(text: string, maxLength: number): boolean {
  const length = text.length;
  if (length === 0 || length > maxLength) return false;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c <= SPACE || c >= DEL) return false;
  }
  return true;
}

/** True for an auth secret: 1–1,024 bytes of printable ASCII without space. */
export function isValidSecret(secret: string): boolean {
  return isPrintableAscii(secret, MAX_SECRET_LENGTH);
}

/** True for a ping nonce: 1–64 bytes of printable ASCII without space. */
export function isValidNonce(nonce: string): boolean {
  return isPrintableAscii(nonce, MAX_NONCE_LENGTH);
}

/** Hex digits in a peer nonce and in a peer proof (32 bytes each). */
export const PEER_HEX_LENGTH = 64;

/** True for a peer nonce or proof: exactly 64 lowercase hex digits. */
export function isValidPeerHex(text: string): boolean {
  if (text.length !== PEER_HEX_LENGTH) return false;
  for (let i = 0; i < PEER_HEX_LENGTH; i++) {
    const c = text.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false;
  }
  return true;
}

/** True for an `I` field name: printable ASCII without space or `=`. */
export function isValidInfoName(name: string): boolean {
  return name.indexOf("=") < 0 && isPrintableAscii(name, Number.MAX_SAFE_INTEGER);
}

/** True for an `I` field value: possibly empty, no space, control character or lone surrogate. */
export function isValidInfoValue(value: string): boolean {
  return textByteLength(value) >= 0;
}

/**
 * Makes free text safe as the message of an `E` line: control characters become spaces (a `\n`
 * would end the line and let the rest pass for another frame) and lone surrogates, which have no
 * UTF-8 form, become U+FFFD. The decoder applies the same rule, so messages round-trip.
 */
export function toMessageText(message: string): string {
  // Rebuild only when needed: almost every message is already clean.
  let clean = true;
  for (let i = 0; i < message.length && clean; i++) {
    const c = message.charCodeAt(i);
    if (c < SPACE || c === DEL || (c >= 0xd800 && c <= 0xdfff)) clean = false;
  }
  if (clean) return message;
  let out = "";
  for (let i = 0; i < message.length; i++) {
    const c = message.charCodeAt(i);
    if (c < SPACE || c === DEL) {
      out += " ";
    } else if (c >= 0xd800 && c <= 0xdbff && isLowSurrogate(message.charCodeAt(i + 1))) {
      out += message.slice(i, i + 2);
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      out += "\ufffd";
    } else {
      out += message[i];
    }
  }
  return out;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}
