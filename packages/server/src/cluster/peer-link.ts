import { connect as connectTcp, isIP, type Socket } from "node:net";
import { type ConnectionOptions, connect as connectTls } from "node:tls";
import { isPeerFrame, LineDecoder, type PeerFrame, parseRequestLine, splitAddress } from "@lock/protocol";
import { SocketWriter } from "@lock/socket-io";

export interface PeerLinkOptions {
  /** `host:port` to dial. */
  readonly address: string;
  readonly authToken: string | undefined;
  readonly tls: ConnectionOptions | undefined;
  /** Delay before redialling a peer that is down. */
  readonly retryMs: number;
  /** Unsent bytes after which a slow peer's link is dropped (it resyncs with a snapshot). */
  readonly maxBufferedBytes: number;
  /** The first lines to send on every new connection (after `H`), e.g. `!J …`. */
  hello(): string;
  onConnect(link: PeerLink): void;
  onDisconnect(link: PeerLink): void;
  /** A frame the peer sent back on this link (acknowledgements). */
  onFrame(link: PeerLink, frame: PeerFrame): void;
  /** The peer answered with an error line, e.g. `AUTH_FAILED`: the link is useless until fixed. */
  onRefused(link: PeerLink, line: string): void;
}

/**
 * This node's outgoing connection to one peer: heartbeats and, while active, the replication
 * stream go out on it; the peer's acknowledgements come back on it. It redials by itself until
 * `close()`. Writes are batched per event-loop turn; frames sent while disconnected are dropped
 * (the peer gets a full snapshot after it reconnects, so nothing depends on them).
 */
export class PeerLink {
  readonly address: string;
  readonly #options: PeerLinkOptions;
  #socket: Socket | undefined;
  #writer: SocketWriter | undefined;
  #connected = false;
  #out = "";
  #flushScheduled = false;
  #closed = false;
  #retry: NodeJS.Timeout | undefined;

  constructor(options: PeerLinkOptions) {
    this.address = options.address;
    this.#options = options;
    this.#dial();
  }

  get connected(): boolean {
    return this.#connected;
  }

  send(lines: string): void {
    if (!this.#connected) return;
    this.#out += lines;
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      process.nextTick(this.#flush);
    }
  }

  /** Sends now rather than at the end of the turn (a handoff waits on it). */
  flush(): void {
    this.#flush();
  }

  /** Drops the connection; it is redialled (a slow peer, or a role change that needs a resync). */
  reset(): void {
    this.#socket?.destroy();
  }

  close(): void {
    this.#closed = true;
    if (this.#retry) clearTimeout(this.#retry);
    this.#socket?.destroy();
  }

  #dial(): void {
    if (this.#closed) return;
    const { host, port } = splitAddress(this.address);
    const socket = this.#options.tls
      ? connectTls({
          ...this.#options.tls,
          host,
          port,
          // SNI takes names only; a certificate for an IP address is checked against its IP SANs.
          ...(isIP(host) ? {} : { servername: this.#options.tls.servername ?? host }),
        })
      : connectTcp({ host, port });
    this.#socket = socket;
    // A slow peer is dropped past maxBufferedBytes, not waited for: nothing to do on a drain.
    const writer = new SocketWriter(socket, () => {});
    this.#writer = writer;
    socket.setNoDelay(true);
    const decoder = new LineDecoder();
    socket.once(this.#options.tls ? "secureConnect" : "connect", () => {
      this.#connected = true;
      const auth = this.#options.authToken === undefined ? "" : `H ${this.#options.authToken}\n`;
      writer.write(auth + this.#options.hello());
      this.#options.onConnect(this);
    });
    socket.on("data", (chunk: Buffer) => {
      for (const line of decoder.push(chunk)) {
        if (typeof line !== "string") continue;
        if (line.startsWith("E ")) {
          this.#options.onRefused(this, line);
          continue;
        }
        const frame = parseRequestLine(line);
        if (isPeerFrame(frame)) this.#options.onFrame(this, frame);
      }
    });
    socket.on("error", () => {});
    socket.once("close", () => {
      const wasConnected = this.#connected;
      this.#connected = false;
      this.#out = "";
      if (this.#socket === socket) {
        this.#socket = undefined;
        this.#writer = undefined;
      }
      if (wasConnected) this.#options.onDisconnect(this);
      if (!this.#closed) this.#retry = setTimeout(() => this.#dial(), this.#options.retryMs);
    });
  }

  readonly #flush = (): void => {
    this.#flushScheduled = false;
    const writer = this.#writer;
    if (!writer || !this.#connected || this.#out === "") return;
    writer.write(this.#out);
    this.#out = "";
    if (writer.queuedBytes > this.#options.maxBufferedBytes) this.#socket?.destroy();
  };
}
