import type { DecodeError } from "./decode-error.js";
import { checkLimits, DEFAULT_LIMITS, type ProtocolLimits } from "./limits.js";
import { LineDecoder } from "./line-decoder.js";
import type { Reply, Request } from "./messages.js";
import { parseReplyLine } from "./parse-reply.js";
import { parseRequestLine } from "./parse-request.js";
import type { PeerFrame } from "./peer.js";

/**
 * Bytes to typed frames: a LineDecoder followed by a line parser. One per connection. `push`
 * never throws and returns frames and errors in stream order; after an error the decoder is
 * already at the next line.
 */
class FrameDecoder<T> {
  readonly #lines: LineDecoder;
  readonly #parse: (line: string) => T | DecodeError;

  constructor(parse: (line: string, limits: ProtocolLimits) => T | DecodeError, limits: ProtocolLimits) {
    checkLimits(limits);
    this.#lines = new LineDecoder(limits);
    this.#parse = (line) => parse(line, limits);
  }

  push(chunk: Uint8Array): Array<T | DecodeError> {
    return this.#lines.pushParsed(chunk, this.#parse);
  }

  /** Bytes of an unfinished line; always below `maxLineBytes`. */
  get bufferedBytes(): number {
    return this.#lines.bufferedBytes;
  }
}

/** Server side: requests, and peer frames on cluster links. */
export class RequestDecoder extends FrameDecoder<Request | PeerFrame> {
  constructor(limits: ProtocolLimits = DEFAULT_LIMITS) {
    super(parseRequestLine, limits);
  }
}

/** Client side: replies. */
export class ReplyDecoder extends FrameDecoder<Reply> {
  constructor(limits: ProtocolLimits = DEFAULT_LIMITS) {
    super(parseReplyLine, limits);
  }
}
