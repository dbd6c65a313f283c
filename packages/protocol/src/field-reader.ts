import { parseSafeInteger } from "./decimal.js";
import { type DecodeError, decodeError, quote } from "./decode-error.js";
import { detach } from "./detach.js";
import { parseSeconds } from "./duration.js";
import { isRequestOp, isValidId, validateKey } from "./fields.js";
import { EXCLUSIVE, type LockMode, MAX_PERMITS, parseLockMode, parseSlot } from "./lock-mode.js";
import type { ErrorCode, RequestOp } from "./messages.js";
import { isValidEpoch, MAX_EPOCH, parseToken } from "./token.js";

/**
 * Cuts `line` at single spaces into at most `limit` fields, the last keeping the rest of the line.
 * Bounded, unlike `split(" ")`, so a line of 60,000 spaces costs no more than a normal one. Two
 * adjacent spaces make an empty field, which then fails that field's own syntax.
 */
export function splitFields(line: string, limit: number): string[] {
  const fields: string[] = [];
  let count = 0;
  let start = 0;
  for (;;) {
    const space = count < limit - 1 ? line.indexOf(" ", start) : -1;
    if (space < 0) {
      fields[count] = line.slice(start);
      return fields;
    }
    // Indexed stores measured faster than push() here, on the hottest path of the decoder.
    fields[count++] = line.slice(start, space);
    start = space + 1;
  }
}

/** Text that is not even a malformed number: letters other than an exponent's `e`. */
const WORDLIKE = /[A-DF-Za-df-z_:]/;

/**
 * Reads the fields of one line in order and records the first invalid one. Parsers read every
 * field even after an error, so the error can still echo a valid key and id found later in the
 * line. Not reused across lines: one reader per line.
 */
export class FieldReader {
  readonly fields: readonly string[];
  #op: RequestOp | "?";
  readonly #maxKeyBytes: number;
  // Peer frames echo nothing: their errors are logged, never matched to a request.
  readonly #echo: boolean;
  #key = "-";
  #id: string | undefined = undefined;
  #code: ErrorCode | undefined = undefined;
  #message = "";

  constructor(fields: readonly string[], op: RequestOp | "?", maxKeyBytes: number, echo: boolean) {
    this.fields = fields;
    this.#op = op;
    this.#maxKeyBytes = maxKeyBytes;
    this.#echo = echo;
  }

  /**
   * BAD_SYNTAX unless the line has `min` to `max` fields. The error still echoes the verb at
   * `opIndex` and the key at `keyIndex` when they are valid (0 means none).
   */
  expect(min: number, max: number, usage: string, keyIndex = 0, opIndex = 0): DecodeError | undefined {
    const count = this.fields.length;
    if (count >= min && count <= max) return undefined;
    if (this.#echo) {
      const op = this.fields[opIndex];
      if (opIndex > 0 && op !== undefined && isRequestOp(op)) this.#op = op;
      const key = this.fields[keyIndex];
      if (keyIndex > 0 && key !== undefined && validateKey(key, this.#maxKeyBytes) === undefined)
        this.#key = key;
    }
    this.fail("BAD_SYNTAX", `expected ${usage}`);
    return this.#error();
  }

  /** Keys and ids outlive their line (a held lock's key), so they are detached from the chunk text. */
  key(index: number): string {
    const key = detach(this.#field(index));
    const code = validateKey(key, this.#maxKeyBytes);
    if (code === undefined) {
      if (this.#echo) this.#key = key;
    } else if (code === "KEY_TOO_LONG") {
      this.fail(code, `the key is over ${this.#maxKeyBytes} bytes of UTF-8`);
    } else {
      this.fail(code, "the key is empty or contains a space or control character");
    }
    return key;
  }

  /** The optional id at `index`: undefined when the line ends before it. */
  id(index: number): string | undefined {
    const id = this.fields[index];
    if (id === undefined) return undefined;
    if (!isValidId(id)) {
      this.fail("BAD_ID", "the id must match [A-Za-z0-9][A-Za-z0-9_.:-]{0,63}");
      return undefined;
    }
    const detached = detach(id);
    if (this.#echo) this.#id = detached;
    return detached;
  }

  /** A verb field (`M`, `E`); `?` is accepted only where `unknown` allows it. */
  op(index: number, unknown: boolean): RequestOp | "?" {
    const verb = this.#field(index);
    if (isRequestOp(verb)) {
      if (this.#echo) this.#op = verb;
      return verb;
    }
    if (!(unknown && verb === "?")) this.fail("BAD_ARGUMENT", `${quote(verb)} is not a request verb`);
    return "?";
  }

  seconds(index: number, what: string): number {
    const field = this.#field(index);
    const ms = parseSeconds(field);
    if (ms !== undefined) return ms;
    // A word where a number belongs is most often the rest of a key typed with a space in it.
    const hint = WORDLIKE.test(field)
      ? ` (got ${quote(field)}: fields are separated by spaces, so a key cannot contain one)`
      : "";
    this.fail("BAD_DURATION", `${what} must be decimal seconds with at most 3 fraction digits${hint}`);
    return 0;
  }

  milliseconds(index: number, what: string): number {
    const ms = parseSafeInteger(this.#field(index));
    if (ms !== undefined) return ms;
    this.fail("BAD_DURATION", `${what} must be integer milliseconds`);
    return 0;
  }

  token(index: number): bigint {
    const token = parseToken(this.#field(index));
    if (token !== undefined) return token;
    this.fail("BAD_TOKEN", "the token must be a canonical decimal u64");
    return 0n;
  }

  /** A lock mode (`x`, `s`, `p<N>`): BAD_ARGUMENT when malformed or out of range. */
  lockMode(index: number): LockMode {
    const mode = parseLockMode(this.#field(index));
    if (mode !== undefined) return mode;
    this.fail("BAD_ARGUMENT", `the mode must be x, s or p<permits> with permits 1..${MAX_PERMITS}`);
    return EXCLUSIVE;
  }

  /** A slot: `-` or a decimal below MAX_PERMITS; BAD_ARGUMENT otherwise. */
  slot(index: number): number | undefined {
    const slot = parseSlot(this.#field(index));
    if (slot !== null) return slot;
    this.fail("BAD_ARGUMENT", `the slot must be - or a decimal below ${MAX_PERMITS}`);
    return undefined;
  }

  /** A u64 that is not a token (epoch, sequence number): BAD_ARGUMENT when malformed. */
  u64(index: number, what: string): bigint {
    const value = parseToken(this.#field(index));
    if (value !== undefined) return value;
    this.fail("BAD_ARGUMENT", `${what} must be a canonical decimal u64`);
    return 0n;
  }

  /** An epoch: a u64 within the token layout's 40 bits (docs/protocol.md), else BAD_ARGUMENT. */
  epoch(index: number): bigint {
    const value = parseToken(this.#field(index));
    if (value !== undefined && isValidEpoch(value)) return value;
    this.fail("BAD_ARGUMENT", `the epoch must be a canonical decimal in 0..${MAX_EPOCH}`);
    return 0n;
  }

  integer(index: number, what: string): number {
    const value = parseSafeInteger(this.#field(index));
    if (value !== undefined) return value;
    this.fail("BAD_ARGUMENT", `${what} must be a canonical decimal integer`);
    return 0;
  }

  /** Any other field, checked by `valid`: BAD_ARGUMENT when it fails. */
  argument(index: number, valid: (text: string) => boolean, what: string): string {
    const text = this.#field(index);
    if (!valid(text)) this.fail("BAD_ARGUMENT", `${what} is malformed`);
    return text;
  }

  /** Records an error; only the first one of a line is reported. */
  fail(code: ErrorCode, message: string): void {
    if (this.#code !== undefined) return;
    this.#code = code;
    this.#message = message;
  }

  /** `value`, or the first error found while reading it. */
  result<T>(value: T): T | DecodeError {
    return this.#code === undefined ? value : this.#error();
  }

  #field(index: number): string {
    // Parsers call expect() first, so the field exists; the fallback only satisfies the type checker.
    return this.fields[index] ?? "";
  }

  #error(): DecodeError {
    return decodeError(this.#code ?? "BAD_SYNTAX", this.#message, this.#op, this.#key, this.#id);
  }
}

/** Adds `id` to a freshly built frame when there is one, so frames without an id have no `id` key. */
export function withId<T extends { readonly id?: string }>(frame: T, id: string | undefined): T {
  if (id !== undefined) (frame as { id?: string }).id = id;
  return frame;
}

/** A verb that no parser knows: BAD_SYNTAX with nothing to echo. */
export function unknownVerb(verb: string): DecodeError {
  return decodeError("BAD_SYNTAX", `unknown verb ${quote(verb)}`);
}

/** The first field of a line, without splitting the rest. */
export function verbOf(line: string): string {
  const space = line.indexOf(" ");
  return space < 0 ? line : line.slice(0, space);
}
