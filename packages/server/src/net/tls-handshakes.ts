import type { Socket } from "node:net";

/** Node's default TLS handshake timeout, used when `--auth-timeout` is 0 (no auth deadline). */
export const DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS = 120_000;

/**
 * How long a TLS handshake may take: at most the auth timeout, since a connection that has not
 * finished its handshake has not authenticated either.
 */
export function tlsHandshakeTimeoutMs(authTimeoutMs: number): number {
  return authTimeoutMs > 0
    ? Math.min(authTimeoutMs, DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS)
    : DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS;
}

/** A TLS connection accepted over TCP whose handshake has not finished. */
export class PendingHandshake {
  readonly #raw: Socket;

  constructor(raw: Socket) {
    this.#raw = raw;
  }

  /** Its slot was taken (Admission): nothing can be said before TLS, so it is destroyed at once. */
  evict(): void {
    this.#raw.destroy();
  }
}

/**
 * The TLS connections between their TCP accept and the end of their handshake. `tls.Server`
 * reports the raw socket on 'connection' and a different object, the TLS socket, on
 * 'secureConnection'; the two are matched by their address pair (local and remote address and
 * port), which identifies one open TCP connection. Counting from the accept on, rather than from the
 * handshake's end, keeps connections that never send a ClientHello inside the connection caps.
 */
export class TlsHandshakes {
  readonly #pending = new Map<string, PendingHandshake>();

  get size(): number {
    return this.#pending.size;
  }

  /**
   * Tracks `raw` until its handshake finishes or it closes; `gone` is called once if it closes
   * first (a timeout, a failed handshake, an eviction, the client leaving).
   */
  accepted(raw: Socket, gone: (handshake: PendingHandshake) => void): PendingHandshake {
    const key = addressPair(raw);
    const handshake = new PendingHandshake(raw);
    this.#pending.set(key, handshake);
    raw.once("close", () => {
      if (this.#pending.get(key) !== handshake) return;
      this.#pending.delete(key);
      gone(handshake);
    });
    return handshake;
  }

  /** The server stops: handshakes in progress have nothing to lose. */
  destroyAll(): void {
    for (const handshake of this.#pending.values()) handshake.evict();
  }

  /** The handshake of `secure` finished: its pending entry, now ended; undefined if it is gone. */
  finished(secure: Socket): PendingHandshake | undefined {
    const key = addressPair(secure);
    const handshake = this.#pending.get(key);
    this.#pending.delete(key);
    return handshake;
  }
}

function addressPair(socket: Socket): string {
  return `${socket.localAddress} ${socket.localPort} ${socket.remoteAddress} ${socket.remotePort}`;
}
