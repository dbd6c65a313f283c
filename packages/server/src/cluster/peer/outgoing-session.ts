import { isDecodeError, isPeerFrame, parseRequestLine } from "@lock/protocol";
import type { ClusterLink, LinkEvents } from "../link.js";
import { DialerHandshake } from "./handshake.js";
import type { PeerKey } from "./peer-auth.js";

/** What one line from the peer means for an outgoing link. */
export type OutgoingStep =
  /** Nothing to do (the `H` that answers the client auth token). */
  | { readonly kind: "none" }
  /** Write `line`: the next handshake frame. */
  | { readonly kind: "send"; readonly line: string }
  /** The handshake is done: the link counts as connected and may carry frames. */
  | { readonly kind: "connected" }
  /** The peer acknowledged the stream up to `seq` (never below an earlier acknowledgement). */
  | { readonly kind: "ack"; readonly seq: number }
  /** The peer answered with an error line (`AUTH_FAILED`, `PEER_AUTH_FAILED`…): drop the connection. */
  | { readonly kind: "refused"; readonly line: string }
  /** The peer is lockd 0.1.0, which refused our versioned hello: redial and say one without a version. */
  | { readonly kind: "older peer" }
  /** The peer broke the protocol: drop the connection. */
  | { readonly kind: "violation"; readonly reason: string };

const NONE: OutgoingStep = { kind: "none" };

export interface OutgoingSessionOptions {
  readonly key: PeerKey;
  /** This node's own `--peers` entry: who it claims to be. */
  readonly self: string;
  /** The peer's `--peers` entry: the address dialled. */
  readonly peer: string;
  /** The client auth token, sent with `H` first (a peer link is admitted like a client). */
  readonly authToken: string | undefined;
  /** Say hello without a version (the peer refused one before: lockd 0.1.0). */
  readonly unversioned?: boolean;
}

/**
 * What lockd 0.1.0 answers a versioned `!N` (its codec refuses the extra field): the listener
 * predates peer protocol versions, and the next dial says hello without one.
 */
const UNVERSIONED_LISTENER = /^E \? - PEER_NOT_AUTHENTICATED - malformed peer frame \(/;

/** What an OutgoingSession needs of the connection under it. */
export interface OutgoingTransport {
  write(lines: string): void;
  /** The handshake is done on this connection (the peer speaks `peerProtocol`): the link counts as connected. */
  connected(peerProtocol: number | undefined): void;
  /** The peer predates peer protocol versions: the link's next dial says hello without one. */
  olderPeer?(): void;
  /** Closes the connection at once (the link redials). */
  drop(): void;
}

/**
 * This node's side of one outgoing peer connection, with no socket and no timer: the dialling half
 * of the handshake (`H` if the cluster has a client auth token, `!N`, the peer's `!C`, our `!V`,
 * the peer's `!V`), then `!J` (`LinkEvents.hello`) and the acknowledgements that come back, checked
 * (they never go backwards) before the Cluster hears of them. `PeerLink` runs it over a socket,
 * `MemoryLink` over the simulator's network: one per connection, fed every line in order.
 */
export class OutgoingSession {
  readonly #link: ClusterLink;
  readonly #events: LinkEvents;
  readonly #transport: OutgoingTransport;
  readonly #handshake: DialerHandshake;
  readonly #authToken: string | undefined;
  /** The `H` reply to our auth token has not come yet: nothing else may. */
  #awaitingH: boolean;
  /** The handshake is done: what comes now is acknowledgements. */
  #connected = false;
  #lastAck = -1;
  readonly #unversioned: boolean;

  constructor(
    options: OutgoingSessionOptions,
    link: ClusterLink,
    events: LinkEvents,
    transport: OutgoingTransport,
  ) {
    this.#link = link;
    this.#events = events;
    this.#transport = transport;
    this.#handshake = new DialerHandshake(options.key, options.self, options.peer, options.unversioned);
    this.#unversioned = options.unversioned === true;
    this.#authToken = options.authToken;
    this.#awaitingH = options.authToken !== undefined;
  }

  /** The connection is up: the handshake begins. */
  open(): void {
    this.#transport.write(
      (this.#authToken === undefined ? "" : `H ${this.#authToken}\n`) + this.#handshake.hello(),
    );
  }

  /** One line from the peer, in order; false once the connection was dropped (read no further). */
  receive(line: string): boolean {
    const step = this.#step(line);
    switch (step.kind) {
      case "none":
        return true;
      case "send":
        this.#transport.write(step.line);
        return true;
      case "connected":
        this.#transport.connected(this.#handshake.peerProtocol);
        this.#transport.write(this.#events.hello());
        this.#events.onConnect(this.#link);
        return true;
      case "ack":
        this.#events.onAck(this.#link, step.seq);
        return true;
      case "refused":
        this.#events.onRefused(this.#link, step.line);
        this.#transport.drop();
        return false;
      case "older peer":
        // Not a refusal: the next dial says the hello it understands, and nothing is reported.
        this.#transport.olderPeer?.();
        this.#transport.drop();
        return false;
      case "violation":
        this.violation(step.reason);
        return false;
    }
  }

  /** The connection broke the protocol below the lines (one too long): reported and dropped. */
  violation(reason: string): void {
    this.#events.onViolation(this.#link, reason);
    this.#transport.drop();
  }

  /** What one line from the peer means here: no effect but on the session's own state. */
  #step(line: string): OutgoingStep {
    if (line.startsWith("E ")) {
      const olderPeer = !this.#connected && !this.#unversioned && UNVERSIONED_LISTENER.test(line);
      return olderPeer ? { kind: "older peer" } : { kind: "refused", line };
    }
    if (this.#awaitingH && line === "H") {
      this.#awaitingH = false;
      return NONE;
    }
    const frame = parseRequestLine(line);
    if (isDecodeError(frame) || !isPeerFrame(frame))
      return { kind: "violation", reason: `${JSON.stringify(line.slice(0, 40))} from the peer` };
    if (!this.#connected) {
      if (this.#awaitingH)
        return { kind: "violation", reason: `!${frame.peer} where the peer's challenge belongs` };
      const step = this.#handshake.step(frame);
      switch (step.kind) {
        case "prove":
          return { kind: "send", line: step.line };
        case "authenticated":
          this.#connected = true;
          return { kind: "connected" };
        case "violation":
          return step;
      }
    }
    if (frame.peer !== "K")
      return { kind: "violation", reason: `!${frame.peer} on the dialling side of a link` };
    if (frame.seq < this.#lastAck)
      return { kind: "violation", reason: `!K ${frame.seq} after !K ${this.#lastAck}` };
    this.#lastAck = frame.seq;
    return { kind: "ack", seq: frame.seq };
  }
}
