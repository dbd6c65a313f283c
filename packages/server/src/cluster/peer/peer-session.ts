import {
  encodePeer,
  type HandoffFrame,
  type HeartbeatFrame,
  type JoinFrame,
  type LockMode,
  type NewEpochFrame,
  type PeerFrame,
  type ReplicatedExtendFrame,
  type ReplicatedFreeFrame,
  type ReplicatedGrantFrame,
  type ReplicatedSharedGrantFrame,
  tokenSequence,
  WHOLE_KEY,
} from "@lock/protocol";
import { KeyTable } from "../../engine/key-table.js";
import { TIMER_MAX_MS } from "../../limits.js";
import { SnapshotHolders } from "./snapshot-holders.js";

/** The frames a PeerSession hands on one at a time, once they passed its checks. */
export type SessionFrame =
  | JoinFrame
  | HeartbeatFrame
  | ReplicatedGrantFrame
  | ReplicatedSharedGrantFrame
  | ReplicatedFreeFrame
  | ReplicatedExtendFrame
  | NewEpochFrame
  | HandoffFrame;

/**
 * A whole snapshot (`!S`, every `!h`/`!q`, `!s`), handed on only once it is complete and consistent.
 * Whoever takes it owns its holders (a load lets go of each as it installs it).
 */
export interface Snapshot {
  readonly epoch: bigint;
  readonly seq: number;
  readonly holders: SnapshotHolders;
}

/** What a snapshot being received has seen of a key of shared holders or permits (`!q`). */
interface SharedKeySeen {
  readonly mode: LockMode;
  readonly tokens: Set<bigint>;
  readonly slots: Set<number>;
}

/** A key a snapshot being received has seen: an exclusive holder's (`!h`), or shared holders'. */
const EXCLUSIVE_SEEN = { exclusive: true } as const;
type KeySeen = typeof EXCLUSIVE_SEEN | SharedKeySeen;

/** Where a session's checked frames go: the Cluster. Called synchronously, in stream order. */
export interface PeerSessionHandler {
  onPeerFrame(session: PeerSession, frame: SessionFrame): void;
  applySnapshot(session: PeerSession, snapshot: Snapshot): void;
  /** True for an address in `--peers` (this node's own included). */
  isMember(address: string): boolean;
  /** The session broke the protocol and is being dropped (reported rate-limited). */
  violated(session: PeerSession, reason: string): void;
}

/** The connection under a session: the net layer's ClientConnection. */
export interface PeerTransport {
  /** Queues a line; written at the end of the current read at the latest. */
  send(line: string): void;
  /** Sends `E ? - PEER_PROTOCOL_ERROR - <message>` and closes the connection. */
  drop(message: string): void;
  /** Closes at once, without a reply (the peer's link redials). */
  close(): void;
}

/**
 * The incoming half of one authenticated peer link: the connection a peer dialled, after it proved
 * the peer token as `peer` (docs/protocol.md, "Peer handshake"). It checks every frame against the
 * protocol before anything acts on it, and drops the link on the first frame that breaks it: a
 * handshake or acknowledgement frame, a node or epoch that does not fit, a sequence number going
 * backwards, a duration beyond any lease, a frame outside its place in the stream. Snapshots are
 * collected whole and handed on at `!s` only if its count and sequence number match what came, so a
 * truncated or padded snapshot never touches the replica.
 *
 * Frames arrive in stream order from one connection; `flushAcks` runs after each read.
 */
export class PeerSession {
  /** The `--peers` address this link proved it is. */
  readonly peer: string;
  readonly #handler: PeerSessionHandler;
  readonly #transport: PeerTransport;
  #joined = false;
  #dropped = false;
  /** Highest replication sequence number seen; the stream never goes below it. */
  #lastSeq = -1;
  /** A snapshot has completed on this link: the stream's changes may follow. */
  #synced = false;
  #snapshot:
    | {
        epoch: bigint;
        seq: number;
        holders: Snapshot["holders"];
        /**
         * The keys seen, to refuse one twice: a KeyTable, not a Set, as a Set of millions grows by
         * copying all of it in one go (0.4 and 0.6 s at 2M and 4M keys, measured on a standby).
         */
        keys: KeyTable<KeySeen>;
      }
    | undefined;
  /** The most holders a snapshot may carry: this node's key limit (it could not hold more). */
  readonly #maxSnapshotHolders: number;
  #pendingAck: number | undefined;

  constructor(
    peer: string,
    handler: PeerSessionHandler,
    transport: PeerTransport,
    maxSnapshotHolders = Number.POSITIVE_INFINITY,
  ) {
    this.peer = peer;
    this.#handler = handler;
    this.#transport = transport;
    this.#maxSnapshotHolders = maxSnapshotHolders;
  }

  /** Inside a snapshot (`!S` seen, `!s` not yet). */
  get receivingSnapshot(): boolean {
    return this.#snapshot !== undefined;
  }

  receive(frame: PeerFrame): void {
    if (this.#dropped) return;
    const problem = this.#check(frame);
    if (problem !== undefined) {
      this.refuse(problem);
      return;
    }
    switch (frame.peer) {
      case "S":
        this.#lastSeq = frame.seq;
        this.#snapshot = {
          epoch: frame.epoch,
          seq: frame.seq,
          holders: new SnapshotHolders(),
          keys: new KeyTable(),
        };
        return;
      case "h": {
        const snapshot = this.#snapshot!;
        snapshot.keys.add(frame.key, EXCLUSIVE_SEEN);
        snapshot.holders.push(frame);
        return;
      }
      case "q": {
        const snapshot = this.#snapshot!;
        const { key, token, mode, slot } = frame;
        // #check refused a key an `!h` had: any earlier holder of this key was a `!q`.
        let seen = snapshot.keys.get(key) as SharedKeySeen | undefined;
        if (seen === undefined) {
          seen = { mode, tokens: new Set(), slots: new Set() };
          snapshot.keys.add(key, seen);
        }
        seen.tokens.add(token);
        if (slot !== undefined) seen.slots.add(slot);
        snapshot.holders.push(frame);
        return;
      }
      case "s": {
        const { epoch, seq, holders } = this.#snapshot!;
        this.#snapshot = undefined;
        this.#synced = true;
        this.#handler.applySnapshot(this, { epoch, seq, holders });
        return;
      }
      case "J":
        this.#joined = true;
        this.#handler.onPeerFrame(this, frame);
        return;
      case "B":
        this.#handler.onPeerFrame(this, frame);
        return;
      case "G":
      case "Q":
      case "F":
      case "X":
      case "P":
      case "O":
        this.#lastSeq = frame.seq;
        this.#handler.onPeerFrame(this, frame);
        return;
    }
  }

  /**
   * Drops the link for a protocol violation: reported, answered with PEER_PROTOCOL_ERROR, closed.
   * Also for lines that are no peer frame at all (a request, an undecodable line).
   */
  refuse(reason: string): void {
    if (this.#dropped) return;
    this.#dropped = true;
    this.#snapshot = undefined;
    this.#pendingAck = undefined;
    this.#handler.violated(this, reason);
    this.#transport.drop(reason);
  }

  /** The stream up to `seq` is applied: acknowledged after the current read. */
  acknowledge(seq: number): void {
    if (!this.#dropped) this.#pendingAck = seq;
  }

  /** Acknowledges up to `seq` now (a handoff: the old active redirects its clients only after it). */
  acknowledgeNow(seq: number): void {
    this.acknowledge(seq);
    this.flushAcks();
  }

  /** After a read: acknowledges what was applied. */
  flushAcks(): void {
    if (this.#pendingAck === undefined || this.#dropped) return;
    this.#transport.send(encodePeer({ peer: "K", seq: this.#pendingAck }));
    this.#pendingAck = undefined;
  }

  /** Drops the connection without a reply (the peer's link redials). */
  close(): void {
    this.#dropped = true;
    this.#transport.close();
  }

  /** Why `frame` may not be applied here, or undefined when it may. */
  #check(frame: PeerFrame): string | undefined {
    switch (frame.peer) {
      case "N":
      case "C":
      case "V":
        return `!${frame.peer} on a link that finished its handshake`;
      case "K":
        return "!K sent to the listening side of a link";
      case "J":
        if (this.#joined) return "a second !J";
        return this.#checkNode(frame.node, frame.epoch, frame.highest);
    }
    if (!this.#joined) return `!${frame.peer} before !J`;
    const snapshot = this.#snapshot;
    switch (frame.peer) {
      case "B": {
        const problem = this.#checkNode(frame.node, frame.epoch, frame.highest);
        if (problem !== undefined || frame.active === undefined) return problem;
        return this.#handler.isMember(frame.active)
          ? undefined
          : `!B names an active (${frame.active}) that is not in --peers`;
      }
      case "S":
        if (snapshot) return "!S inside a snapshot";
        return this.#checkSeq("S", frame.seq);
      case "h":
        if (!snapshot) return "!h outside a snapshot";
        if (snapshot.holders.length >= this.#maxSnapshotHolders)
          return `more !h than this node's key limit (${this.#maxSnapshotHolders})`;
        if (snapshot.keys.has(frame.key)) return "a key twice in one snapshot";
        return checkToken(frame.token) ?? checkDuration("remainingMs", frame.remainingMs);
      case "q":
        if (!snapshot) return "!q outside a snapshot";
        if (snapshot.holders.length >= this.#maxSnapshotHolders)
          return `more holders than this node's key limit (${this.#maxSnapshotHolders})`;
        return (
          checkSharedHolder(snapshot.keys.get(frame.key), frame) ??
          checkToken(frame.token) ??
          checkDuration("remainingMs", frame.remainingMs)
        );
      case "s":
        if (!snapshot) return "!s without !S";
        if (snapshot.holders.length !== frame.count)
          return `!s counts ${frame.count} holders, but ${snapshot.holders.length} came`;
        if (frame.seq !== snapshot.seq) return `!s ${frame.seq} ends the snapshot !S ${snapshot.seq} began`;
        return undefined;
    }
    // The stream: G, F, X, P, O.
    if (snapshot) return `!${frame.peer} inside a snapshot`;
    if (!this.#synced) return `!${frame.peer} before a snapshot`;
    const problem = this.#checkSeq(frame.peer, frame.seq);
    if (problem !== undefined) return problem;
    switch (frame.peer) {
      case "G":
      case "Q":
      case "X":
        return checkToken(frame.token) ?? checkDuration("leaseMs", frame.leaseMs);
      case "F":
        // Token 0 frees every holder of the key (a folded key that had shared holders).
        return frame.token === WHOLE_KEY ? undefined : checkToken(frame.token);
      case "P":
      case "O":
        return undefined;
    }
  }

  #checkNode(node: string, epoch: bigint, highest: bigint): string | undefined {
    if (node !== this.peer) return `claims to be ${node}, but proved to be ${this.peer}`;
    // A node's highest known epoch includes its own.
    if (epoch > highest) return `epoch ${epoch} above its highest known epoch ${highest}`;
    return undefined;
  }

  #checkSeq(verb: string, seq: number): string | undefined {
    return seq < this.#lastSeq
      ? `!${verb} ${seq} after ${this.#lastSeq}: the sequence went backwards`
      : undefined;
  }
}

function checkToken(token: bigint): string | undefined {
  // Every token ever issued has a sequence of 1 or more within its epoch.
  return tokenSequence(token) === 0n ? `token ${token}, whose sequence is 0: no grant has it` : undefined;
}

/** Leases and remaining leases are at most the longest lease any node accepts: a Node timer's longest. */
function checkDuration(what: string, ms: number): string | undefined {
  return ms > TIMER_MAX_MS ? `${what} ${ms} beyond the longest lease (${TIMER_MAX_MS} ms)` : undefined;
}

/** A `!q` fits its snapshot: its key not also an `!h`'s, one mode per key, no token or slot twice. */
function checkSharedHolder(
  seen: KeySeen | undefined,
  frame: { key: string; token: bigint; mode: LockMode; slot: number | undefined },
): string | undefined {
  if (seen === undefined) return undefined;
  if ("exclusive" in seen) return "a key twice in one snapshot";
  const { mode } = frame;
  if (
    mode.kind !== seen.mode.kind ||
    (mode.kind === "permit" && seen.mode.kind === "permit" && mode.limit !== seen.mode.limit)
  )
    return "one key in two modes in one snapshot";
  if (seen.tokens.has(frame.token)) return "a holder twice in one snapshot";
  if (frame.slot !== undefined && seen.slots.has(frame.slot)) return "a slot twice in one snapshot";
  return undefined;
}
