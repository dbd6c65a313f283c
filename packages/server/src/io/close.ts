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

/**
 * Bounds how many refused sockets (no slot, or the server stopping) linger at once. Past `max`, a
 * refusal is destroyed right after its error line reached the kernel: a flood against a server
 * whose slots are all taken by authenticated clients then cannot hold descriptors either.
 */
export class LingerBudget {
  readonly #max: number;
  #lingering = 0;

  constructor(max: number) {
    this.#max = max;
  }

  end(socket: Socket): void {
    if (this.#lingering >= this.#max) {
      socket.destroy();
      return;
    }
    this.#lingering += 1;
    socket.once("close", () => {
      this.#lingering -= 1;
    });
    endWithLinger(socket);
  }
}
