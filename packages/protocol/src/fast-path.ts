import { detach } from "./detach.js";
import { parseSeconds } from "./duration.js";
import { isValidId, validateKey } from "./fields.js";
import type { AcquireRequest, GrantedReply, ReleasedReply, ReleaseRequest } from "./messages.js";
import { parseToken } from "./token.js";

/**
 * Hand-written parsers for the lines of every lock's life, the grant and the release: `A` and `R`
 * requests, `A` and `R` replies. The general parsers split a line into a field array and read it
 * through a FieldReader, which costs about as much again as the parse itself; these cut the line
 * with indexOf. They accept only lines that are well-formed and return exactly what the general
 * parser would (fast-path.test.ts checks that on generated and mangled lines); anything else,
 * every error included, returns undefined and goes to the general parser, so errors are described
 * in one place.
 */

const SPACE = 0x20;
const A = 0x41;
const R = 0x52;
const ZERO = 0x30;
const ONE = 0x31;

/** The key `line[start, end)`, detached from the line, if it is a valid key. */
function keyAt(line: string, start: number, end: number, maxKeyBytes: number): string | undefined {
  if (end <= start) return undefined;
  const key = detach(line.slice(start, end));
  return validateKey(key, maxKeyBytes) === undefined ? key : undefined;
}

function idAt(line: string, start: number): string | undefined {
  const id = line.slice(start);
  return isValidId(id) ? detach(id) : undefined;
}

/** `A <key> <lease> <wait> [<id>]` or `R <key> <token> [<id>]`; undefined for anything else. */
export function fastRequest(line: string, maxKeyBytes: number): AcquireRequest | ReleaseRequest | undefined {
  if (line.charCodeAt(1) !== SPACE) return undefined;
  const verb = line.charCodeAt(0);
  if (verb !== A && verb !== R) return undefined;
  const keyEnd = line.indexOf(" ", 2);
  if (keyEnd < 0) return undefined;
  const key = keyAt(line, 2, keyEnd, maxKeyBytes);
  if (key === undefined) return undefined;
  if (verb === R) {
    const tokenEnd = line.indexOf(" ", keyEnd + 1);
    const token = parseToken(tokenEnd < 0 ? line.slice(keyEnd + 1) : line.slice(keyEnd + 1, tokenEnd));
    if (token === undefined) return undefined;
    if (tokenEnd < 0) return { op: "R", key, token };
    const id = idAt(line, tokenEnd + 1);
    return id === undefined ? undefined : { op: "R", key, token, id };
  }
  const leaseEnd = line.indexOf(" ", keyEnd + 1);
  if (leaseEnd < 0) return undefined;
  const leaseMs = parseSeconds(line.slice(keyEnd + 1, leaseEnd));
  if (leaseMs === undefined) return undefined;
  const waitEnd = line.indexOf(" ", leaseEnd + 1);
  const waitMs = parseSeconds(waitEnd < 0 ? line.slice(leaseEnd + 1) : line.slice(leaseEnd + 1, waitEnd));
  if (waitMs === undefined) return undefined;
  if (waitEnd < 0) return { op: "A", key, leaseMs, waitMs };
  const id = idAt(line, waitEnd + 1);
  return id === undefined ? undefined : { op: "A", key, leaseMs, waitMs, id };
}

/** `A <key> <token> [<id>]` or `R <key> 0|1`; undefined for anything else. */
export function fastReply(line: string, maxKeyBytes: number): GrantedReply | ReleasedReply | undefined {
  if (line.charCodeAt(1) !== SPACE) return undefined;
  const verb = line.charCodeAt(0);
  if (verb === R) {
    // The outcome is the last character; the key is everything between the two spaces.
    const last = line.length - 1;
    const outcome = line.charCodeAt(last);
    if ((outcome !== ZERO && outcome !== ONE) || line.indexOf(" ", 2) !== last - 1) return undefined;
    const key = keyAt(line, 2, last - 1, maxKeyBytes);
    return key === undefined ? undefined : { kind: "R", key, released: outcome === ONE };
  }
  if (verb !== A) return undefined;
  const keyEnd = line.indexOf(" ", 2);
  if (keyEnd < 0) return undefined;
  const key = keyAt(line, 2, keyEnd, maxKeyBytes);
  if (key === undefined) return undefined;
  const tokenEnd = line.indexOf(" ", keyEnd + 1);
  const token = parseToken(tokenEnd < 0 ? line.slice(keyEnd + 1) : line.slice(keyEnd + 1, tokenEnd));
  if (token === undefined) return undefined;
  if (tokenEnd < 0) return { kind: "A", key, token };
  const id = idAt(line, tokenEnd + 1);
  return id === undefined ? undefined : { kind: "A", key, token, id };
}
