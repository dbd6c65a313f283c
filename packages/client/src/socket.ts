/**
 * The part of a `net.Socket` the client uses, and what a `connect` option must return (a
 * `net.Socket` is one). Events, as a `net.Socket` emits them: `connect` once it can carry requests,
 * `data` with each chunk received, `drain` after a `write` that returned false, `error` (optional,
 * before `close`), and `close` exactly once, never synchronously inside a call to the socket.
 */
export interface ClientSocket {
  /** Queues `data`; false when the socket buffers more than it wants: the client waits for `drain`. */
  write(data: string): boolean;
  /** Closes at once; `close` follows. */
  destroy(): void;
  /** True once destroyed or closed. */
  readonly destroyed: boolean;
  on(event: "connect" | "drain" | "close", listener: () => void): unknown;
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
  setNoDelay?(noDelay: boolean): unknown;
  setKeepAlive?(enable: boolean, initialDelayMs: number): unknown;
}

/** The server a `connect` option is asked to open a connection to. */
export interface ServerAddress {
  readonly host: string;
  readonly port: number;
  /** As configured (or as a redirect named it): `host:port`, `[::1]:7420` for IPv6. */
  readonly address: string;
}

/** Opens a socket to one server: `connect`'s own, or `node:net` / `node:tls`. */
export type SocketFactory = (server: ServerAddress) => ClientSocket;

/** What a connection hears from its socket besides drain, error and close. */
export interface SocketReader {
  /** A chunk arrived (it may be overwritten once this returns: copy what you keep). */
  onData(chunk: Uint8Array): void;
  /** The socket can carry requests: TCP connected, or the TLS handshake done. */
  onConnect(): void;
}
