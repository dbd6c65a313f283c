import type { Socket } from "node:net";

/**
 * How long a connection the server ended may wait for the client to close its side. The client has
 * the last reply by then (it was written before the server's FIN); waiting at all rather than
 * destroying at once keeps a client's late bytes from drawing a reset that could discard that reply
 * before it is read. A client that never closes (a slowloris tool, a half-open socket) would
 * otherwise keep the socket, and its connection slot, forever.
 */
export const CLOSE_LINGER_MS = 1_000;

/** Ends `socket` once its queued writes are out; destroys it if the client has not closed within the linger. */
export function endWithLinger(socket: Socket): void {
  socket.end();
  if (socket.destroyed) return;
  const linger = setTimeout(() => socket.destroy(), CLOSE_LINGER_MS);
  linger.unref();
  socket.once("close", () => clearTimeout(linger));
}
