import { type DecodeError, decodeError } from "./decode-error.js";
import { utf8ByteLength } from "./fields.js";
import { checkLineLimit, DEFAULT_LIMITS, type ProtocolLimits } from "./limits.js";

const LF = 0x0a;
const CR = 0x0d;
const INITIAL_CAPACITY = 256;
// After a long partial line, keep at most this much buffer for the next one.
const RETAINED_CAPACITY = 4096;

// fatal: invalid UTF-8 must be refused, not turned into U+FFFD. ignoreBOM: a U+FEFF is key text
// like any other character, not a byte-order mark to drop.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Node's Buffer, recognised without importing it (this package runs anywhere) by `latin1Slice`: the
 * method behind `buffer.toString("latin1", start, end)`, called directly to skip its argument checks.
 */
interface NodeBuffer {
  latin1Slice?: (start: number, end: number) => string;
}

/** Up to this many bytes, checking for ASCII in JavaScript beats the decoder's fixed cost. */
const ASCII_SCAN_MAX = 512;

/**
 * A short all-ASCII region of a Buffer as text; undefined otherwise. Protocol traffic is nearly
 * always ASCII, and a request or reply often arrives alone: decoding one short line through
 * TextDecoder (with a view to make) costs more than the rest of its parse.
 */
function asciiText(bytes: Uint8Array, start: number, end: number): string | undefined {
  const buffer = bytes as unknown as NodeBuffer;
  if (end - start > ASCII_SCAN_MAX || buffer.latin1Slice === undefined) return undefined;
  for (let i = start; i < end; i++) if (bytes[i]! >= 0x80) return undefined;
  // ASCII is the same in Latin-1, and Latin-1 decoding is a plain copy.
  return buffer.latin1Slice(start, end);
}

function tooLong(maxLineBytes: number): DecodeError {
  return decodeError("LINE_TOO_LONG", `the line is over ${maxLineBytes} bytes; it was discarded`);
}

const BAD_ENCODING_MESSAGE = "the line is not valid UTF-8";

const asIs = (line: string) => line;

/**
 * Push-based framing: bytes in, complete lines out, for any chunking. A line is at most
 * `maxLineBytes` bytes counting its `\n` (and a `\r` before it). A longer line yields one
 * LINE_TOO_LONG as soon as it is known to be too long, and its bytes are dropped up to the next
 * `\n`, so at most `maxLineBytes - 1` bytes are ever buffered. One trailing `\r` is stripped,
 * empty lines are skipped, and a line that is not valid UTF-8 yields BAD_ENCODING. Never throws.
 *
 * Not safe for concurrent use, which JavaScript rules out anyway; results come out in stream order.
 * Chunks are copied where needed, so the caller may reuse them after `push` returns.
 */
export class LineDecoder {
  readonly #maxLineBytes: number;
  #buffer = new Uint8Array(0);
  #buffered = 0;
  // Inside a line already reported as too long: drop bytes up to the next "\n".
  #discarding = false;

  constructor(limits: Pick<ProtocolLimits, "maxLineBytes"> = DEFAULT_LIMITS) {
    this.#maxLineBytes = checkLineLimit(limits.maxLineBytes);
  }

  /** Bytes of an unfinished line held until its `\n` arrives; always below `maxLineBytes`. */
  get bufferedBytes(): number {
    return this.#buffered;
  }

  push(chunk: Uint8Array): Array<string | DecodeError> {
    return this.pushParsed(chunk, asIs);
  }

  /**
   * Like `push`, with each line passed through `parse` (RequestDecoder and ReplyDecoder use it).
   * `parse` must not throw: the decoder's state would be left mid-chunk.
   */
  pushParsed<T>(chunk: Uint8Array, parse: (line: string) => T): Array<T | DecodeError> {
    const out: Array<T | DecodeError> = [];
    const end = chunk.length;
    let start = 0;
    if (this.#buffered > 0 || this.#discarding) {
      const newline = chunk.indexOf(LF);
      if (newline < 0) {
        this.#keep(chunk, 0, end, out);
        return out;
      }
      this.#finishLine(chunk, newline, parse, out);
      start = newline + 1;
    }
    const lastNewline = chunk.lastIndexOf(LF);
    if (lastNewline >= start) {
      this.#emitWholeLines(chunk, start, lastNewline + 1, parse, out);
      start = lastNewline + 1;
    }
    if (start < end) this.#keep(chunk, start, end, out);
    return out;
  }

  /** Completes the line begun in earlier chunks with `chunk[0, newline)`. */
  #finishLine<T>(
    chunk: Uint8Array,
    newline: number,
    parse: (line: string) => T,
    out: Array<T | DecodeError>,
  ): void {
    if (this.#discarding) {
      this.#discarding = false;
      return;
    }
    const length = this.#buffered + newline;
    if (length + 1 > this.#maxLineBytes) {
      out.push(tooLong(this.#maxLineBytes));
    } else {
      this.#ensureCapacity(length);
      this.#buffer.set(chunk.subarray(0, newline), this.#buffered);
      this.#emitBytes(this.#buffer, 0, length, parse, out);
    }
    this.#buffered = 0;
    if (this.#buffer.length > RETAINED_CAPACITY) this.#buffer = new Uint8Array(0);
  }

  /**
   * Emits the lines of `bytes[start, end)`, which ends with "\n". The usual case decodes the whole
   * region in one call, which is several times faster than a call per line: valid UTF-8 splits at
   * "\n" exactly as its bytes do. Invalid UTF-8 anywhere sends the region down the per-line path,
   * so only the bad lines are refused.
   */
  #emitWholeLines<T>(
    bytes: Uint8Array,
    start: number,
    end: number,
    parse: (line: string) => T,
    out: Array<T | DecodeError>,
  ): void {
    let text = asciiText(bytes, start, end);
    if (text === undefined) {
      try {
        text = utf8.decode(bytes.subarray(start, end));
      } catch {
        text = undefined;
      }
    }
    if (text === undefined) {
      for (let lineStart = start; lineStart < end; ) {
        const newline = bytes.indexOf(LF, lineStart);
        this.#emitBytes(bytes, lineStart, newline, parse, out);
        lineStart = newline + 1;
      }
      return;
    }
    const max = this.#maxLineBytes;
    for (let lineStart = 0; lineStart < text.length; ) {
      const newline = text.indexOf("\n", lineStart);
      const units = newline - lineStart;
      // A UTF-16 unit is 1 to 3 UTF-8 bytes: count bytes only when the unit count cannot decide.
      if (units + 1 > max || (3 * units + 1 > max && utf8ByteLength(text, lineStart, newline) + 1 > max)) {
        out.push(tooLong(max));
      } else {
        const lineEnd = newline > lineStart && text.charCodeAt(newline - 1) === CR ? newline - 1 : newline;
        if (lineEnd > lineStart) out.push(parse(text.slice(lineStart, lineEnd)));
      }
      lineStart = newline + 1;
    }
  }

  /** Emits the line `bytes[start, newline)`, decoding it on its own. */
  #emitBytes<T>(
    bytes: Uint8Array,
    start: number,
    newline: number,
    parse: (line: string) => T,
    out: Array<T | DecodeError>,
  ): void {
    if (newline - start + 1 > this.#maxLineBytes) {
      out.push(tooLong(this.#maxLineBytes));
      return;
    }
    const lineEnd = newline > start && bytes[newline - 1] === CR ? newline - 1 : newline;
    if (lineEnd === start) return;
    let line: string;
    try {
      line = utf8.decode(bytes.subarray(start, lineEnd));
    } catch {
      out.push(decodeError("BAD_ENCODING", BAD_ENCODING_MESSAGE));
      return;
    }
    out.push(parse(line));
  }

  /** Buffers `chunk[start, end)`, the start of a line with no "\n" yet. */
  #keep<T>(chunk: Uint8Array, start: number, end: number, out: Array<T | DecodeError>): void {
    if (this.#discarding) return;
    const length = this.#buffered + end - start;
    // Even if the "\n" came next, the line would have `length + 1` bytes.
    if (length + 1 > this.#maxLineBytes) {
      out.push(tooLong(this.#maxLineBytes));
      this.#discarding = true;
      this.#buffered = 0;
      this.#buffer = new Uint8Array(0);
      return;
    }
    this.#ensureCapacity(length);
    this.#buffer.set(chunk.subarray(start, end), this.#buffered);
    this.#buffered = length;
  }

  #ensureCapacity(needed: number): void {
    if (this.#buffer.length >= needed) return;
    let capacity = Math.max(INITIAL_CAPACITY, this.#buffer.length * 2);
    while (capacity < needed) capacity *= 2;
    // Never more than one maximal line: the limit bounds memory per connection.
    const grown = new Uint8Array(Math.min(capacity, this.#maxLineBytes - 1));
    grown.set(this.#buffer.subarray(0, this.#buffered));
    this.#buffer = grown;
  }
}
