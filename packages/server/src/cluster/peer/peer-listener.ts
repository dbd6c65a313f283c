import type { DecodeError, PeerFrame } from "@lock/protocol";
import type { ListenerHandshake, ListenerRefusal } from "./handshake.js";
import { PeerSession, type PeerSessionHandler, type PeerTransport } from "./peer-session.js";

/** The error codes a connection is refused with as a peer. */
export type PeerRefusal = ListenerRefusal | "PEER_PROTOCOL_ERROR";

/**
 * What a PeerListener needs of the incoming connection under it: lockd's ClientConnection, or a
 * connection of the simulator's network. Called synchronously while a line is handled.
 */
export interface IncomingConnection {
  /** The remote address, for reports. */
  readonly remote: string;
  /** Authenticated as a client (`H`, or no auth token is set): a peer handshake may begin. */
  readonly authenticated: boolean;
  /** Ran a client verb: it can no longer become a peer link. */
  readonly servedClient: boolean;
  /** Closing already: nothing more is said to it. */
  readonly closing: boolean;
  /** Queues a line (dropped once the connection is closed). */
  send(line: string): void;
  /** Answers `E ? - <code> - <message>` and closes once it is written. */
  fail(code: PeerRefusal, message: string): void;
  /** `fail`, after the auth failure delay, reading nothing meanwhile (a wrong proof, like a wrong `H`). */
  failAfterDelay(code: PeerRefusal, message: string): void;
  /** Closes at once, without a reply (the peer's link redials). */
  close(): void;
  /** The dialling node was challenged: it has until the auth timeout to prove the token. */
  challenged(): void;
  /** It proved the token: the connection is a peer link from now on (no auth timeout, admitted). */
  becamePeer(): void;
}

/** What every PeerListener of a node shares: the Cluster's side. */
export interface PeerListenerDeps {
  /** The listening side of a fresh handshake (the cluster's key, this node, its peers). */
  handshake(): ListenerHandshake;
  /** Where an authenticated link's checked frames go. */
  readonly handler: PeerSessionHandler;
  /** A connection refused as a peer, reported rate-limited (`ClusterEvents.peerRejected`). */
  rejected(remote: string, node: string | undefined, reason: string): void;
  /** The most holders a snapshot may carry: this node's key limit. */
  readonly maxSnapshotHolders: number;
}

/**
 * The peer side of one incoming connection: its peer handshake (ListenerHandshake), then, once the
 * dialling node proved the peer token, its PeerSession, which every line goes to from then on.
 * lockd's ClientConnection hands it the connection's peer frames (and, once it is a link, every
 * other line); the simulator's node hands it every line of a peer's connection. A connection that
 * sends peer frames without being allowed to (before `H`, after client verbs, or failing the
 * handshake) is refused and reported here.
 */
export class PeerListener {
  readonly #deps: PeerListenerDeps;
  readonly #connection: IncomingConnection;
  #handshake: ListenerHandshake | undefined;
  #session: PeerSession | undefined;

  constructor(deps: PeerListenerDeps, connection: IncomingConnection) {
    this.#deps = deps;
    this.#connection = connection;
  }

  /** The connection proved it is a peer: every line is the link's. */
  get isLink(): boolean {
    return this.#session !== undefined;
  }

  /** A handshake began or the connection is a link: client-side pauses (a handoff) leave it alone. */
  get engaged(): boolean {
    return this.#session !== undefined || this.#handshake !== undefined;
  }

  frame(frame: PeerFrame): void {
    if (this.#session) {
      this.#session.receive(frame);
      return;
    }
    const connection = this.#connection;
    if (!connection.authenticated) {
      this.#refuse("PEER_NOT_AUTHENTICATED", "peer frame before H: authenticate with H first");
      return;
    }
    if (connection.servedClient) {
      this.#refuse("PEER_NOT_AUTHENTICATED", "peer frame on a connection that ran client verbs");
      return;
    }
    this.#handshake ??= this.#deps.handshake();
    const step = this.#handshake.step(frame);
    switch (step.kind) {
      case "challenge":
        connection.send(step.line);
        connection.challenged();
        return;
      case "authenticated":
        connection.send(step.line);
        this.#session = new PeerSession(
          step.node,
          this.#deps.handler,
          this.#transport(),
          this.#deps.maxSnapshotHolders,
        );
        connection.becamePeer();
        return;
      case "refused":
        this.#refuse(step.code, step.reason, step.node);
        return;
    }
  }

  /**
   * A line that does not decode, meant as a peer frame (`error.peer`) or on a link: never answered
   * field by field. The link is dropped; any other connection is refused as a peer.
   */
  undecodable(error: DecodeError): void {
    if (this.#session) this.#session.refuse(`${error.code}: ${error.message}`);
    else this.#refuse("PEER_NOT_AUTHENTICATED", `malformed peer frame (${error.code})`);
  }

  /** A client request on a peer link: the link is dropped. False when this is no link (a client's). */
  request(op: string): boolean {
    if (!this.#session) return false;
    this.#session.refuse(`a ${op} request on a peer link`);
    return true;
  }

  /** After each read: the link acknowledges what it applied. */
  endOfRead(): void {
    this.#session?.flushAcks();
  }

  #transport(): PeerTransport {
    const connection = this.#connection;
    return {
      send: (line) => connection.send(line),
      drop: (message) => connection.fail("PEER_PROTOCOL_ERROR", message),
      close: () => connection.close(),
    };
  }

  /**
   * Refuses a connection that is not an authenticated peer link: reported (rate-limited) and
   * closed. A failed proof is answered only after the auth failure delay, like a wrong `H`.
   */
  #refuse(code: ListenerRefusal, reason: string, node?: string): void {
    const connection = this.#connection;
    if (connection.closing) return;
    this.#deps.rejected(connection.remote, node, reason);
    if (code === "PEER_AUTH_FAILED") connection.failAfterDelay(code, reason);
    else connection.fail(code, reason);
  }
}
