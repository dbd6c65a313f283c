import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { encodePeer, type PeerFrame } from "@lock/protocol";
import { OLDEST_PEER_PROTOCOL, PEER_PROTOCOL_VERSION, peerVersionProblem } from "./peer-version.js";

/**
 * The peer handshake's cryptography (docs/protocol.md, "Peer handshake"): both ends prove they hold
 * the peer token, without sending it, by an HMAC-SHA256 over both addresses and a fresh nonce from
 * each side. The dialling node proves first, so a connection to the client port learns nothing it
 * could test guesses of the token against; the listening node's proof follows, so the dialling node
 * never streams replication to, or takes acknowledgements from, a node that does not hold the token.
 *
 * Without a peer token (`--insecure`) the key is empty: the handshake runs the same way, and anyone
 * who can reach the port can complete it.
 */
export type PeerSide = "dialer" | "listener";

/** What both proofs cover: the claimed dialling address, the dialled address and both nonces. */
export interface PeerTranscript {
  /** The dialling node's `--peers` address, as its `!N` claims. */
  readonly dialer: string;
  /** The listening node's advertised address: the `--peers` entry the dialling node dialled. */
  readonly listener: string;
  readonly dialerNonce: string;
  readonly listenerNonce: string;
}

const PROOF_LABEL = "lockd-peer-v1";
const NONCE_BYTES = 32;

export class PeerKey {
  readonly #key: Buffer;

  /** `token` undefined: no peer token, the handshake authenticates nobody (see the class comment). */
  constructor(token: string | undefined) {
    this.#key = Buffer.from(token ?? "", "utf8");
  }

  /** True when there is no peer token: every handshake with an empty key succeeds. */
  get insecure(): boolean {
    return this.#key.length === 0;
  }

  /** A fresh nonce: 32 random bytes as 64 lowercase hex digits. */
  static nonce(): string {
    return randomBytes(NONCE_BYTES).toString("hex");
  }

  /** `side`'s proof for `transcript`, as 64 lowercase hex digits. */
  proof(side: PeerSide, transcript: PeerTranscript): string {
    const { dialer, listener, dialerNonce, listenerNonce } = transcript;
    return createHmac("sha256", this.#key)
      .update(`${PROOF_LABEL} ${side} ${dialer} ${listener} ${dialerNonce} ${listenerNonce}`, "utf8")
      .digest("hex");
  }

  /** Whether `presented` (64 hex digits, as the codec checked) is `side`'s proof; constant time. */
  verify(side: PeerSide, transcript: PeerTranscript, presented: string): boolean {
    const expected = Buffer.from(this.proof(side, transcript), "hex");
    const actual = Buffer.from(presented, "hex");
    return actual.length === expected.length && timingSafeEqual(expected, actual);
  }
}

/** Why a listening node refuses a connection's peer handshake. */
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
      const listenerNonce = PeerKey.nonce();
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
      return this.#refuse("PEER_AUTH_FAILED", "wrong proof of the peer token", hello.node);
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
