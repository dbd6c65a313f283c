import { encodePeer, type PeerFrame } from "@lock/protocol";
import type { PeerKey, PeerTranscript } from "./peer-auth.js";
import {
  OLDEST_PEER_PROTOCOL,
  PEER_PROTOCOL_VERSION,
  peerVersionProblem,
  UNVERSIONED_PEER_PROTOCOL,
} from "./peer-version.js";

/**
 * Both sides of the peer handshake (docs/protocol.md, "Peer handshake"), pure: frames in, lines to
 * write and outcomes out, no sockets and no timers, so lockd and the simulator run the same steps.
 *
 *   dialer → `!N <node> <nonce>`     (hello: who it claims to be)
 *   listener → `!C <nonce>`          (challenge)
 *   dialer → `!V <proof>`            (it holds the peer token)
 *   listener → `!V <proof>`          (so does the listener)
 *
 * Everything the two sides exchange before the link carries frames is decided here: a field added
 * to the handshake (a protocol version) is checked in `ListenerHandshake.step` on `!N` and in
 * `DialerHandshake.step` on `!C`, and written where those frames are encoded below.
 */

/** Why a listener refuses a connection the peer handshake on it. */
export type ListenerRefusal = "PEER_NOT_AUTHENTICATED" | "PEER_AUTH_FAILED" | "PEER_VERSION_UNSUPPORTED";

/** The outcome of one peer frame on a connection that is not (yet) a peer link. */
export type HandshakeStep =
  /** Write `line` (the challenge) and wait for the proof. */
  | { readonly kind: "challenge"; readonly line: string }
  /** The dialling node proved the token: write `line` (this node's proof); the connection is a peer link of `node`. */
  | { readonly kind: "authenticated"; readonly node: string; readonly line: string }
  /** Refuse the connection with `code`, and close it. `node` is the address it claimed, if any. */
  | {
      readonly kind: "refused";
      readonly code: ListenerRefusal;
      readonly reason: string;
      readonly node?: string;
    };

/**
 * The listening side of the peer handshake on one incoming connection: `!N` (hello), `!C` (our
 * challenge), `!V` (their proof), `!V` (ours). Pure apart from the nonce it draws; one per
 * connection, and refused for good after its first refusal.
 */
export class ListenerHandshake {
  readonly #key: PeerKey;
  readonly #self: string;
  readonly #isPeer: (address: string) => boolean;
  readonly #oldestVersion: number;
  #hello: { node: string; nonce: string; listenerNonce: string } | undefined;
  #over = false;

  /**
   * `isPeer(address)`: the address is another node's `--peers` entry (not this node's own).
   * `oldestVersion`: the oldest peer protocol linked with (a test moves the window).
   */
  constructor(
    key: PeerKey,
    self: string,
    isPeer: (address: string) => boolean,
    oldestVersion = OLDEST_PEER_PROTOCOL,
  ) {
    this.#key = key;
    this.#self = self;
    this.#isPeer = isPeer;
    this.#oldestVersion = oldestVersion;
  }

  step(frame: PeerFrame): HandshakeStep {
    if (this.#over) return this.#refuse("PEER_NOT_AUTHENTICATED", "the peer handshake is over");
    const hello = this.#hello;
    if (hello === undefined) {
      if (frame.peer !== "N") {
        return this.#refuse("PEER_NOT_AUTHENTICATED", `!${frame.peer} before the peer handshake`);
      }
      if (!this.#isPeer(frame.node)) {
        return this.#refuse("PEER_AUTH_FAILED", "the claimed node is not another --peers entry", frame.node);
      }
      const versionProblem = peerVersionProblem(frame.version, this.#oldestVersion);
      if (versionProblem !== undefined)
        return this.#refuse("PEER_VERSION_UNSUPPORTED", versionProblem, frame.node);
      const listenerNonce = this.#key.nonce();
      this.#hello = { node: frame.node, nonce: frame.nonce, listenerNonce };
      // A hello without a version comes from lockd 0.1.0, whose codec refuses a `!C` with one.
      const challenge =
        frame.version === undefined
          ? { peer: "C" as const, nonce: listenerNonce }
          : { peer: "C" as const, nonce: listenerNonce, version: PEER_PROTOCOL_VERSION };
      return { kind: "challenge", line: encodePeer(challenge) };
    }
    if (frame.peer !== "V") {
      return this.#refuse("PEER_NOT_AUTHENTICATED", `!${frame.peer} before the peer proof`, hello.node);
    }
    const transcript: PeerTranscript = {
      dialer: hello.node,
      listener: this.#self,
      dialerNonce: hello.nonce,
      listenerNonce: hello.listenerNonce,
    };
    if (!this.#key.verify("dialer", transcript, frame.proof)) {
      const what = this.#key.coordinated
        ? "wrong proof of the peer token (or a node without --coordinator, or of another --cluster-name)"
        : "wrong proof of the peer token";
      return this.#refuse("PEER_AUTH_FAILED", what, hello.node);
    }
    this.#over = true;
    return {
      kind: "authenticated",
      node: hello.node,
      line: encodePeer({ peer: "V", proof: this.#key.proof("listener", transcript) }),
    };
  }

  #refuse(code: ListenerRefusal, reason: string, node?: string): HandshakeStep {
    this.#over = true;
    return node === undefined ? { kind: "refused", code, reason } : { kind: "refused", code, reason, node };
  }
}

/** The outcome of one peer frame on the dialling side while its handshake runs. */
export type DialerStep =
  /** Write `line` (this node's proof) and wait for the listener's. */
  | { readonly kind: "prove"; readonly line: string }
  /** The listener proved the token: the link may carry frames. */
  | { readonly kind: "authenticated" }
  /** The listener broke the handshake, or failed to prove the token: drop the connection. */
  | { readonly kind: "violation"; readonly reason: string };

/**
 * The dialling side of the peer handshake on one outgoing connection: `hello()` is its `!N`, then
 * `step` takes the listener's `!C` and `!V`. Pure apart from the nonce it draws; one per connection.
 */
export class DialerHandshake {
  readonly #key: PeerKey;
  /** Who this node claims to be (its `--peers` entry) and whom it dialled (the peer's). */
  readonly #self: string;
  readonly #peer: string;
  readonly #nonce: string;
  /** Say hello without a version: the peer is lockd 0.1.0, which refuses one (see OutgoingSession). */
  readonly #unversioned: boolean;
  #transcript: PeerTranscript | undefined;
  #peerProtocol: number | undefined;

  constructor(key: PeerKey, self: string, peer: string, unversioned = false) {
    this.#key = key;
    this.#self = self;
    this.#peer = peer;
    this.#nonce = key.nonce();
    this.#unversioned = unversioned;
  }

  /** The peer protocol the listener answered with (its `!C`); undefined before it did. */
  get peerProtocol(): number | undefined {
    return this.#peerProtocol;
  }

  /** The first frame on the connection (after `H`, if the cluster has a client auth token). */
  hello(): string {
    const node = this.#self;
    const nonce = this.#nonce;
    return encodePeer(
      this.#unversioned
        ? { peer: "N", node, nonce }
        : { peer: "N", node, nonce, version: PEER_PROTOCOL_VERSION },
    );
  }

  step(frame: PeerFrame): DialerStep {
    const transcript = this.#transcript;
    if (transcript === undefined) {
      if (frame.peer !== "C") return violation(`!${frame.peer} where the peer's challenge belongs`);
      const versionProblem = peerVersionProblem(frame.version);
      if (versionProblem !== undefined) return violation(versionProblem);
      this.#peerProtocol = frame.version ?? UNVERSIONED_PEER_PROTOCOL;
      const proving: PeerTranscript = {
        dialer: this.#self,
        listener: this.#peer,
        dialerNonce: this.#nonce,
        listenerNonce: frame.nonce,
      };
      this.#transcript = proving;
      return { kind: "prove", line: encodePeer({ peer: "V", proof: this.#key.proof("dialer", proving) }) };
    }
    if (frame.peer !== "V") return violation(`!${frame.peer} where the peer's proof belongs`);
    if (!this.#key.verify("listener", transcript, frame.proof))
      return violation("the peer did not prove it holds the peer token");
    return { kind: "authenticated" };
  }
}

function violation(reason: string): DialerStep {
  return { kind: "violation", reason };
}
