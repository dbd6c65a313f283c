/** Helpers shared by the decoder tests: feeding bytes in pieces and collecting what comes out. */
import { encodePeer, encodeRequest } from "./encode.js";
import type { Request } from "./messages.js";
import { isPeerFrame, type PeerFrame } from "./peer.js";

export const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** Anything with a `push` that takes bytes, like the three decoders. */
export interface Pushable<T> {
  push(chunk: Uint8Array): T[];
}

/** Feeds `bytes` cut at `cuts` (ascending offsets) and returns everything decoded, in order. */
export function decodeInPieces<T>(decoder: Pushable<T>, bytes: Uint8Array, cuts: readonly number[]): T[] {
  const out: T[] = [];
  let start = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(...decoder.push(bytes.subarray(start, cut)));
    start = cut;
  }
  return out;
}

/** Every split point for short inputs; a spread of them (ends included) for long ones. */
export function splitPoints(length: number): number[] {
  if (length <= 2048) return Array.from({ length: length + 1 }, (_, i) => i);
  const points = new Set([0, 1, 2, length - 2, length - 1, length]);
  for (let i = 0; i <= length; i += Math.ceil(length / 200)) points.add(i);
  return [...points].sort((a, b) => a - b);
}

export function bytesOf(line: string | Uint8Array): Uint8Array {
  return typeof line === "string" ? utf8(line) : line;
}

/** A request or a peer frame as one line: what flows client (or peer) to server. */
export function encodeRequestOrPeer(value: Request | PeerFrame): string {
  return isPeerFrame(value) ? encodePeer(value) : encodeRequest(value);
}
