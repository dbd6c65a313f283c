import type { LockMode } from "./lock-mode.js";
/**
 * Peer frames: node-to-node messages on cluster links (docs/protocol.md, "Peer frames"). On the wire
 * each starts with `!` and its verb; here they are discriminated by `peer`. Tokens, epochs and
 * are u64 `bigint`s, replication sequence numbers safe integers (2^53 changes is centuries at any rate); durations are integer milliseconds *remaining*,
 * never wall-clock times, because the two machines' clocks differ.
 *
 * Ordering: on one link, frames apply in the order sent. `seq` numbers the replication stream so a
 * standby can acknowledge (`!K`) everything up to a point and the active can tell what it missed.
 */

export type PeerVerb =
  | "N"
  | "C"
  | "V"
  | "J"
  | "B"
  | "S"
  | "h"
  | "q"
  | "s"
  | "G"
  | "Q"
  | "F"
  | "X"
  | "P"
  | "O"
  | "K";

export type NodeRole = "active" | "standby";

/**
 * `!N`: peer hello, the dialling node's first peer frame (after `H` when the cluster has a client
 * auth token): the `--peers` address it claims to be, and its nonce. docs/protocol.md, "Peer
 * handshake".
 */
export interface PeerHelloFrame {
  readonly peer: "N";
  readonly node: string;
  /** 32 random bytes, 64 lowercase hex digits. */
  readonly nonce: string;
  /** The dialling node's peer protocol version; absent from lockd 0.1.0, which speaks version 1. */
  readonly version?: number;
}

/** `!C`: the listening node's challenge: its own nonce (64 lowercase hex digits). */
export interface PeerChallengeFrame {
  readonly peer: "C";
  readonly nonce: string;
  /** The listening node's peer protocol version: sent only to a hello that carried one. */
  readonly version?: number;
}

/**
 * `!V`: proof of the peer token, HMAC-SHA256 over both addresses and both nonces (64 lowercase hex
 * digits). The dialling node proves first; the listening node answers with its own proof.
 */
export interface PeerProofFrame {
  readonly peer: "V";
  readonly proof: string;
}

/** `!J`: the first frame on a peer link once the handshake is done. */
export interface JoinFrame {
  readonly peer: "J";
  /** The sender's advertised `host:port`. */
  readonly node: string;
  readonly role: NodeRole;
  /** The epoch the sender issues tokens from (or last did). */
  readonly epoch: bigint;
  /** The highest epoch the sender has taken or heard of, anywhere in the cluster. */
  readonly highest: bigint;
}

/** `!B`: heartbeat, sent every heartbeat interval in both directions. */
export interface HeartbeatFrame {
  readonly peer: "B";
  readonly node: string;
  readonly role: NodeRole;
  readonly epoch: bigint;
  /** The active the sender knows of; absent (`-` on the wire) when it knows none. */
  readonly active?: string;
  /** The highest epoch the sender has taken or heard of, anywhere in the cluster. */
  readonly highest: bigint;
  /**
   * The sender, a standby, holds a whole copy of an active's table (it loaded an active's snapshot
   * and follows its stream); false while it has none (just restarted, or a snapshot half loaded).
   * Undefined: not said (lockd 0.1.0 sends no such field). A synced standby promotes over one that
   * is not (docs/consistency.md, "Failover").
   */
  readonly synced?: boolean;
}

/**
 * `!S`: snapshot begin; `!h` frames follow, then `!s`. The active sends the table in chunks while it
 * keeps serving, so how many holders it sends is known only at the end (`!s`).
 */
export interface SnapshotBeginFrame {
  readonly peer: "S";
  readonly epoch: bigint;
  /** The replication sequence the snapshot starts from: changes after it follow the snapshot. */
  readonly seq: number;
}

/** `!h`: one holder in a snapshot. */
export interface SnapshotHolderFrame {
  readonly peer: "h";
  readonly key: string;
  readonly token: bigint;
  readonly remainingMs: number;
  readonly id?: string;
}

/**
 * How a shared holder or a permit holds its key, in `!q` and `!Q`: `mode` is shared or a permit
 * (never exclusive: those travel as `!h`/`!G`), `slot` the permit's slot (undefined when shared).
 */
export interface SharedHold {
  readonly mode: LockMode;
  readonly slot: number | undefined;
}

/** `!q`: one shared holder or permit in a snapshot. */
export interface SnapshotSharedHolderFrame extends SharedHold {
  readonly peer: "q";
  readonly key: string;
  readonly token: bigint;
  readonly remainingMs: number;
  readonly id?: string;
}

/** `!s`: snapshot end: the `!S` sequence number again, and how many `!h` frames were sent. */
export interface SnapshotEndFrame {
  readonly peer: "s";
  readonly seq: number;
  readonly count: number;
}

/** `!G`: a replicated grant. */
export interface ReplicatedGrantFrame {
  readonly peer: "G";
  readonly seq: number;
  readonly key: string;
  readonly token: bigint;
  readonly leaseMs: number;
  readonly id?: string;
}

/** `!Q`: a replicated grant to a shared holder or a permit. */
export interface ReplicatedSharedGrantFrame extends SharedHold {
  readonly peer: "Q";
  readonly seq: number;
  readonly key: string;
  readonly token: bigint;
  readonly leaseMs: number;
  readonly id?: string;
}

/** The token of a `!F` that frees every holder of its key (a folded catch-up; no grant has token 0). */
export const WHOLE_KEY = 0n;

/** `!F`: a replicated free (release or lease expiry). */
export interface ReplicatedFreeFrame {
  readonly peer: "F";
  readonly seq: number;
  readonly key: string;
  readonly token: bigint;
}

/** `!X`: a replicated extension; the lease is `leaseMs` from receipt. */
export interface ReplicatedExtendFrame {
  readonly peer: "X";
  readonly seq: number;
  readonly key: string;
  readonly token: bigint;
  readonly leaseMs: number;
}

/** `!P`: the active moved to a new epoch. */
export interface NewEpochFrame {
  readonly peer: "P";
  readonly seq: number;
  readonly epoch: bigint;
}

/** `!O`: handoff; the receiver is the successor and promotes with an epoch above `epoch`. */
export interface HandoffFrame {
  readonly peer: "O";
  readonly seq: number;
  readonly epoch: bigint;
}

/** `!K`: acknowledges everything up to and including `seq`. */
export interface AckFrame {
  readonly peer: "K";
  readonly seq: number;
}

export type PeerFrame =
  | PeerHelloFrame
  | PeerChallengeFrame
  | PeerProofFrame
  | JoinFrame
  | HeartbeatFrame
  | SnapshotBeginFrame
  | SnapshotHolderFrame
  | SnapshotSharedHolderFrame
  | SnapshotEndFrame
  | ReplicatedGrantFrame
  | ReplicatedSharedGrantFrame
  | ReplicatedFreeFrame
  | ReplicatedExtendFrame
  | NewEpochFrame
  | HandoffFrame
  | AckFrame;

/** Distinguishes peer frames from requests in what a RequestDecoder yields. */
export function isPeerFrame(frame: object): frame is PeerFrame {
  return "peer" in frame;
}
