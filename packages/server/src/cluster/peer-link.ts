import { connect as connectTcp, isIP, type Socket } from "node:net";
import { type ConnectionOptions, connect as connectTls } from "node:tls";
import {
  encodePeer,
  isDecodeError,
  isPeerFrame,
  LineDecoder,
  parseRequestLine,
  splitAddress,
} from "@lock/protocol";
import { SocketWriter } from "@lock/socket-io";
import { endWithLinger } from "../io/close.js";
import type { ClusterLink, LinkEvents, LinkFactory } from "./link.js";
import { PeerKey, type PeerTranscript } from "./peer/peer-auth.js";
import { PEER_PROTOCOL_VERSION, peerVersionProblem, UNVERSIONED_PEER_PROTOCOL } from "./peer/peer-version.js";

/**
 * What lockd 0.1.0 answers a versioned `!N` (its codec refuses the extra field): the listener
 * predates peer protocol versions, and the next dial says hello without one.
 */
const UNVERSIONED_LISTENER = /^E \? - PEER_NOT_AUTHENTICATED - malformed peer frame \(/;

export interface PeerLinkOptions extends LinkEvents {
  /** `host:port` to dial: the peer's `--peers` entry. */
  readonly address: string;
  /** This node's own `--peers` entry: who it claims to be in the handshake. */
  readonly self: string;
  /** The client auth token, sent with `H` first (a peer link is admitted like a client). */
  readonly authToken: string | undefined;
  /** The peer token, proved in the handshake. */
  readonly key: PeerKey;
  /** The TLS options of the next dial (they may change between dials: a reload); undefined: TCP. */
  readonly tls: (() => ConnectionOptions) | undefined;
  /** Delay before redialling a peer that is down. */
  readonly retryMs: number;
  /** A connection whose handshake has not finished by then is dropped and redialled. */
  readonly handshakeTimeoutMs: number;
  /** Unsent bytes after which a slow peer's link is dropped (it resyncs with a snapshot). */
  readonly maxBufferedBytes: number;
}

/** Where a connection is in its life: the handshake (docs/protocol.md, "Peer handshake"), then ready. */
type LinkState =
  | { readonly step: "hello"; readonly nonce: string; awaitingH: boolean }
  | { readonly step: "proving"; readonly transcript: PeerTranscript }
  | { readonly step: "ready"; lastAck: number };

/**
 * This node's outgoing connection to one peer: heartbeats and, while active, the replication
 * stream go out on it; the peer's acknowledgements come back on it. Each connection first runs the
 * peer handshake (`H` if the cluster has a client auth token, `!N`, the peer's `!C`, our `!V`, the
 * peer's `!V`): only a peer that proved the peer token is sent `!J` and anything after it, and
 * counts as connected. It redials by itself until `close()`. Writes are batched per event-loop turn;
 * frames sent while disconnected are dropped (the peer gets a full snapshot after it reconnects, so
 * nothing depends on them).
 */
export class PeerLink implements ClusterLink {
  readonly address: string;
  readonly #options: PeerLinkOptions;
  #socket: Socket | undefined;
  #writer: SocketWriter | undefined;
  #connected = false;
  #out = "";
  #flushScheduled = false;
  #closed = false;
  /**
   * The peer refused our versioned hello as malformed (lockd 0.1.0): say hello without a version
   * (protocol 1) until a link made that way closes, since the peer may come back upgraded.
   */
  #unversionedHello = false;
  /** The peer protocol the peer answered with (`!C`), on the current connection. */
  #peerProtocol: number | undefined;
  #retry: NodeJS.Timeout | undefined;

  constructor(options: PeerLinkOptions) {
    this.address = options.address;
    this.#options = options;
    this.#dial();
  }

  /** The handshake is done on the current connection: frames sent now reach the peer. */
  get connected(): boolean {
    return this.#connected;
  }

  get peerProtocol(): number | undefined {
    return this.#connected ? this.#peerProtocol : undefined;
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

  /** Sent but not yet taken by the kernel: batched for this turn, or queued on the socket. */
  get queuedBytes(): number {
    return this.#out.length + (this.#writer?.queuedBytes ?? 0);
  }

  /** Drops the connection; it is redialled (a slow peer, or a role change that needs a resync). */
  reset(): void {
    this.#socket?.destroy();
  }

  /** Stops redialling and ends the connection once what was sent (a last heartbeat) is out. */
  close(): void {
    this.#closed = true;
    if (this.#retry) clearTimeout(this.#retry);
    this.#flush();
    if (this.#socket) endWithLinger(this.#socket);
  }

  #dial(): void {
    if (this.#closed) return;
    const { host, port } = splitAddress(this.address);
    const tls = this.#options.tls?.();
    const socket = tls
      ? connectTls({
          ...tls,
          host,
          port,
          // SNI takes names only; a certificate for an IP address is checked against its IP SANs.
          ...(isIP(host) ? {} : { servername: tls.servername ?? host }),
        })
      : connectTcp({ host, port });
    this.#socket = socket;
    // A slow peer is dropped past maxBufferedBytes, not waited for: nothing to do on a drain.
    const writer = new SocketWriter(socket, () => {});
    this.#writer = writer;
    socket.setNoDelay(true);
    const decoder = new LineDecoder();
    let state: LinkState | undefined;
    const handshakeTimer = setTimeout(() => {
      // Only a peer that accepted the connection and then stalled the handshake is worth a report;
      // a connect that never completes (a host that drops packets) is just a peer that is down.
      if (state !== undefined)
        this.#options.onViolation(this, "no peer handshake within the handshake timeout");
      socket.destroy();
    }, this.#options.handshakeTimeoutMs);
    socket.once(tls ? "secureConnect" : "connect", () => {
      const nonce = PeerKey.nonce();
      const auth = this.#options.authToken;
      state = { step: "hello", nonce, awaitingH: auth !== undefined };
      writer.write((auth === undefined ? "" : `H ${auth}\n`) + this.#helloLine(nonce));
    });
    socket.on("data", (chunk: Buffer) => {
      for (const line of decoder.push(chunk)) {
        if (socket.destroyed || state === undefined) return;
        if (typeof line !== "string") {
          this.#violation(socket, `${line.code} from the peer`);
          return;
        }
        if (line.startsWith("E ")) {
          this.#refusedWith(line, state);
          socket.destroy();
          return;
        }
        const problem = this.#receive(state, line, writer, (next) => {
          state = next;
        });
        if (problem !== undefined) {
          this.#violation(socket, problem);
          return;
        }
        if (state.step === "ready" && !this.#connected) {
          clearTimeout(handshakeTimer);
          this.#connected = true;
          writer.write(this.#options.hello());
          this.#options.onConnect(this);
        }
      }
    });
    socket.on("error", () => {});
    socket.once("close", () => {
      clearTimeout(handshakeTimer);
      const wasConnected = this.#connected && this.#socket === socket;
      if (this.#socket === socket) {
        this.#connected = false;
        this.#out = "";
        this.#socket = undefined;
        this.#writer = undefined;
      }
      this.#peerProtocol = undefined;
      if (wasConnected) {
        this.#unversionedHello = false;
        this.#options.onDisconnect(this);
      }
      if (!this.#closed) this.#retry = setTimeout(() => this.#dial(), this.#options.retryMs);
    });
  }

  /** `!N`: with this release's peer protocol version, unless the peer is lockd 0.1.0 (#unversionedHello). */
  #helloLine(nonce: string): string {
    const self = this.#options.self;
    return encodePeer(
      this.#unversionedHello
        ? { peer: "N", node: self, nonce }
        : { peer: "N", node: self, nonce, version: PEER_PROTOCOL_VERSION },
    );
  }

  /** The peer answered with an error (the connection is then dropped and redialled). */
  #refusedWith(line: string, state: LinkState): void {
    // An older peer, not a refusal: the next dial says the hello it understands, and nothing is reported.
    if (state.step === "hello" && !this.#unversionedHello && UNVERSIONED_LISTENER.test(line)) {
      this.#unversionedHello = true;
      return;
    }
    this.#options.onRefused(this, line);
  }

  /** One line from the peer in `state`: moves the handshake on, or passes an ack; else says what is wrong. */
  #receive(
    state: LinkState,
    line: string,
    writer: SocketWriter,
    setState: (next: LinkState) => void,
  ): string | undefined {
    if (state.step === "hello" && state.awaitingH && line === "H") {
      state.awaitingH = false;
      return undefined;
    }
    const frame = parseRequestLine(line);
    if (isDecodeError(frame) || !isPeerFrame(frame))
      return `${JSON.stringify(line.slice(0, 40))} from the peer`;
    switch (state.step) {
      case "hello": {
        if (frame.peer !== "C" || state.awaitingH) return `!${frame.peer} where the peer's challenge belongs`;
        const versionProblem = peerVersionProblem(frame.version);
        if (versionProblem !== undefined) return versionProblem;
        this.#peerProtocol = frame.version ?? UNVERSIONED_PEER_PROTOCOL;
        const transcript: PeerTranscript = {
          dialer: this.#options.self,
          listener: this.address,
          dialerNonce: state.nonce,
          listenerNonce: frame.nonce,
        };
        writer.write(encodePeer({ peer: "V", proof: this.#options.key.proof("dialer", transcript) }));
        setState({ step: "proving", transcript });
        return undefined;
      }
      case "proving":
        if (frame.peer !== "V") return `!${frame.peer} where the peer's proof belongs`;
        if (!this.#options.key.verify("listener", state.transcript, frame.proof))
          return "the peer did not prove it holds the peer token";
        setState({ step: "ready", lastAck: -1 });
        return undefined;
      case "ready":
        if (frame.peer !== "K") return `!${frame.peer} on the dialling side of a link`;
        if (frame.seq < state.lastAck) return `!K ${frame.seq} after !K ${state.lastAck}`;
        state.lastAck = frame.seq;
        this.#options.onAck(this, frame.seq);
        return undefined;
    }
  }

  #violation(socket: Socket, reason: string): void {
    this.#options.onViolation(this, reason);
    socket.destroy();
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

/** How this node dials its peers: everything a PeerLink needs but the peer and the Cluster's events. */
export type PeerDialOptions = Omit<PeerLinkOptions, "address" | keyof LinkEvents>;

/** Links over TCP (or TLS) sockets: the production LinkFactory. */
export function peerLinks(dial: PeerDialOptions): LinkFactory {
  return (address, events) => new PeerLink({ ...dial, ...events, address });
}
