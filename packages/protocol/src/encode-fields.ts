import { quote } from "./decode-error.js";
import {
  isValidAddress,
  isValidId,
  isValidNonce,
  isValidPeerHex,
  isValidSecret,
  validateKey,
} from "./fields.js";
import type { ProtocolLimits } from "./limits.js";

/**
 * Field checks for the encoders. Encoders trust the types but not the values: a key with a space
 * or a `\n` would split into other fields or another frame (injection), so every text field is
 * checked and a bad one throws instead of reaching the wire.
 */

export function keyText(key: string, limits: ProtocolLimits): string {
  const code = validateKey(key, limits.maxKeyBytes);
  if (code === "KEY_TOO_LONG") throw new RangeError(`key is over ${limits.maxKeyBytes} bytes of UTF-8`);
  if (code !== undefined)
    throw new TypeError(`invalid key ${quote(key)}: empty, or a space or control character`);
  return key;
}

/** `""` or `" <id>"`, for the optional id at the end of a line. */
export function idSuffix(id: string | undefined): string {
  if (id === undefined) return "";
  if (!isValidId(id)) throw new TypeError(`invalid id ${quote(id)}`);
  return ` ${id}`;
}

/** `""` or `" <nonce>"`. */
export function nonceSuffix(nonce: string | undefined): string {
  if (nonce === undefined) return "";
  if (!isValidNonce(nonce)) throw new TypeError(`invalid nonce ${quote(nonce)}`);
  return ` ${nonce}`;
}

export function secretText(secret: string): string {
  // Never quote a secret in an error: errors end up in logs.
  if (!isValidSecret(secret))
    throw new TypeError("invalid secret: 1-1024 bytes of printable ASCII without space");
  return secret;
}

export function addressText(address: string): string {
  if (!isValidAddress(address)) throw new TypeError(`invalid address ${quote(address)}`);
  return address;
}

/** A peer nonce or proof: 64 lowercase hex digits. Never quoted: a proof is as good as a secret for a replay. */
export function peerHexText(text: string, what: string): string {
  if (!isValidPeerHex(text)) throw new TypeError(`invalid ${what}: 64 lowercase hex digits expected`);
  return text;
}
