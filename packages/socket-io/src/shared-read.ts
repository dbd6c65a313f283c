import { Socket } from "node:net";
import { fastIoEnabled } from "./fast-io.js";

/**
 * Every plain TCP connection reads into this one buffer. libuv reads one socket at a time and the
 * callback consumes the bytes before returning (the request decoder copies what it keeps), so one
 * buffer serves every connection; per-connection buffers would cost 64 KiB each.
 */
const sharedBuffer = Buffer.allocUnsafe(64 * 1024);

/**
 * Moves an accepted plain TCP connection onto a socket that reads with `onread` into the shared
 * buffer and hands each chunk to `receive`: no Buffer allocation and no Readable stream machinery
 * per read, which is most of what separates a Node server's round trip from a C server's.
 *
 * Node offers `onread` only to sockets it connects, not to accepted ones, so this builds a new
 * Socket around the accepted one's handle. The server must accept with `pauseOnConnect` (nothing
 * read yet). The old socket is then destroyed without its handle, which settles the server's
 * connection count. Returns undefined, leaving the socket as it was, when the fast paths are off
 * (the default: see `useFastIo`) or the handle is not there (a Node whose internals differ): the
 * caller then reads with 'data' events.
 */
export function readIntoSharedBuffer(accepted: Socket, receive: (chunk: Buffer) => void): Socket | undefined {
  if (!fastIoEnabled()) return undefined;
  const internals = accepted as unknown as { _handle: unknown };
  const handle = internals._handle;
  if (handle === null || typeof handle !== "object") return undefined;
  internals._handle = null;
  accepted.destroy();
  return new Socket({
    handle,
    readable: true,
    writable: true,
    onread: {
      buffer: sharedBuffer,
      callback: (bytes: number) => {
        receive(sharedBuffer.subarray(0, bytes));
        return true;
      },
    },
  } as ConstructorParameters<typeof Socket>[0]);
}
