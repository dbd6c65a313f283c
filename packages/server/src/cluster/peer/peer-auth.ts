import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

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

/** 32 random bytes as 64 lowercase hex digits. */
function randomNonce(): string {
  return randomBytes(NONCE_BYTES).toString("hex");
}

export class PeerKey {
  readonly #key: Buffer;
  readonly #nonce: () => string;
  readonly #label: string;

  /**
   * `token` undefined: no peer token, the handshake authenticates nobody (see the class comment).
   * `nonce`: where fresh nonces come from (random bytes; the simulator draws them from its seed).
   * `clusterName`: with a coordinator, the cluster's name; it goes into every proof, so a node
   * configured without a coordinator, or for another cluster, cannot join (it would promote by
   * heartbeats alone beside nodes that wait for the lease). Without one the proofs are as before.
   */
  constructor(token: string | undefined, nonce: () => string = randomNonce, clusterName?: string) {
    this.#key = Buffer.from(token ?? "", "utf8");
    this.#nonce = nonce;
    this.#label = clusterName === undefined ? PROOF_LABEL : `${PROOF_LABEL} coordinated ${clusterName}`;
  }

  /** The proofs cover a coordinator and cluster name (see the constructor). */
  get coordinated(): boolean {
    return this.#label !== PROOF_LABEL;
  }

  /** True when there is no peer token: every handshake with an empty key succeeds. */
  get insecure(): boolean {
    return this.#key.length === 0;
  }

  /** A fresh nonce for one handshake: 64 lowercase hex digits. */
  nonce(): string {
    return this.#nonce();
  }

  /** `side`'s proof for `transcript`, as 64 lowercase hex digits. */
  proof(side: PeerSide, transcript: PeerTranscript): string {
    const { dialer, listener, dialerNonce, listenerNonce } = transcript;
    return createHmac("sha256", this.#key)
      .update(`${this.#label} ${side} ${dialer} ${listener} ${dialerNonce} ${listenerNonce}`, "utf8")
      .digest("hex");
  }

  /** Whether `presented` (64 hex digits, as the codec checked) is `side`'s proof; constant time. */
  verify(side: PeerSide, transcript: PeerTranscript, presented: string): boolean {
    const expected = Buffer.from(this.proof(side, transcript), "hex");
    const actual = Buffer.from(presented, "hex");
    return actual.length === expected.length && timingSafeEqual(expected, actual);
  }
}
