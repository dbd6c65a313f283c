import type { Socket } from "node:net";
import { TLSSocket } from "node:tls";
import { getSystemErrorName } from "node:util";
import { fastIoEnabled } from "./fast-io.js";
import {
  type StreamHandle,
  type StreamInternals,
  streamInternals,
  type WriteRequest,
} from "./stream-internals.js";

export interface SocketWriterOptions {
  /**
   * Write straight into the socket's handle when possible. Default: whether the fast paths are on
   * (`useFastIo`, off unless the process turned them on). `false` always uses `socket.write`; so
   * does a TLS socket, and a Node whose internals differ.
   */
  direct?: boolean;
}

// A write that completes at once never hands its request to C++, so one spare serves every such
// write of every socket; a write left queued keeps its request, and the spare is replaced.
let spareRequest: WriteRequest | undefined;

/**
 * The writing side of one socket, for a caller that batches its own output into strings.
 *
 * `net.Socket#write` runs the Writable stream's bookkeeping on every call: a request object, a
 * callback, a tick to report the write done. For a request/reply protocol that is a measurable part
 * of each round trip. On a plain TCP socket this hands the string to the socket's libuv handle the
 * way `write` itself ends up doing: when the kernel takes it all, nothing else happens; when it does
 * not, libuv keeps the rest queued in order (later writes queue behind it) and `drained` is called
 * once all of it has gone. Anything already buffered in the stream (written while connecting, say)
 * goes first: the writer then uses `socket.write` until the stream is empty.
 *
 * Use it for every write of the socket; `socket.end()` and `destroy()` work as usual (a shutdown
 * waits for the queued bytes). A write that fails destroys the socket with the errno error, as
 * `socket.write` would; writes after `end()` or `destroy()` are dropped.
 */
export class SocketWriter {
  readonly #socket: Socket;
  readonly #drained: () => void;
  readonly #internals: StreamInternals | undefined;
  /** UTF-16 units handed to libuv that it has not written yet (direct writes only). */
  #queued = 0;

  /**
   * `drained` is called after a `write` returned false, once everything written has reached the
   * kernel: the caller may produce output again.
   */
  constructor(socket: Socket, drained: () => void, options: SocketWriterOptions = {}) {
    this.#socket = socket;
    this.#drained = drained;
    const direct = (options.direct ?? fastIoEnabled()) && !(socket instanceof TLSSocket);
    this.#internals = direct ? streamInternals() : undefined;
    // The stream reports its own drains, for the writes that go through it.
    socket.on("drain", () => {
      if (this.#queued === 0) drained();
    });
  }

  /** Whether writes can bypass the stream (a plain TCP socket on a Node with the expected internals). */
  get direct(): boolean {
    return this.#internals !== undefined;
  }

  /** About how much output is waiting for the kernel (characters queued directly, bytes in the stream). */
  get queuedBytes(): number {
    return this.#queued + this.#socket.writableLength;
  }

  /** Writes `text` as UTF-8. False when some of it had to wait: hold further output until `drained`. */
  write(text: string): boolean {
    const socket = this.#socket;
    if (socket.writableEnded || socket.destroyed) return true;
    const handle = this.#directHandle();
    if (handle === undefined) {
      // Behind a write in progress the stream keeps what it is given until the kernel takes it.
      // Handed over as a Buffer, that is exactly its bytes, outside the heap; a string built by
      // concatenation would keep every piece and joint on the heap, several times its size.
      const chunk = socket.writableLength > 0 ? Buffer.from(text, "utf8") : text;
      return socket.write(chunk) && this.#queued === 0;
    }
    const internals = this.#internals!;
    const request = spareRequest ?? internals.newRequest();
    spareRequest = undefined;
    const status = handle.writeUtf8String(request, text);
    if (status !== 0) {
      // The request may have been taken and released by C++: do not reuse it.
      socket.destroy(errnoError(status));
      return false;
    }
    if (!internals.lastWriteWasAsync()) {
      spareRequest = request;
      return this.#queued === 0;
    }
    const length = text.length;
    this.#queued += length;
    request.handle = handle;
    request.oncomplete = (completion: number) => this.#completed(completion, length);
    return false;
  }

  #directHandle(): StreamHandle | undefined {
    if (this.#internals === undefined) return undefined;
    const socket = this.#socket;
    if (socket.connecting || socket.writableLength > 0) return undefined;
    const handle = (socket as unknown as { _handle: StreamHandle | null })._handle;
    if (handle === null || typeof handle?.writeUtf8String !== "function") return undefined;
    return handle;
  }

  #completed(status: number, length: number): void {
    this.#queued -= length;
    // A socket destroyed meanwhile cancels its queued writes: nothing to report.
    if (this.#socket.destroyed) return;
    if (status < 0) {
      this.#socket.destroy(errnoError(status));
      return;
    }
    if (this.#queued === 0 && this.#socket.writableLength === 0) this.#drained();
  }
}

/** The error `socket.write` would report for a failed write: `write EPIPE`, with code and errno. */
function errnoError(status: number): NodeJS.ErrnoException {
  let name: string;
  try {
    name = getSystemErrorName(status);
  } catch {
    name = `errno ${status}`;
  }
  const error: NodeJS.ErrnoException = new Error(`write ${name}`);
  error.code = name;
  error.errno = status;
  error.syscall = "write";
  return error;
}
