import type { HandoffFrame, NewEpochFrame } from "@lock/protocol";
import type { Membership } from "./membership.js";
import type { PeerSession, Snapshot } from "./peer/peer-session.js";
import { Replica, type ReplicaTable, type TableChange } from "./replica.js";

/** What the standby's rules need of the rest of the node. */
export interface StandbyDeps {
  readonly membership: Membership;
  /** The node serves (active), or still does until its handoff is acknowledged: it follows no one. */
  serving(): boolean;
  /** Records an epoch a peer told of (RoleChanges.learn). */
  learn(from: string, epoch: bigint): void;
  /** Answers queued acquires with a redirect to `address` (they cannot be served here). */
  redirectPending(address: string): void;
  /** Points clients at `address`. */
  follow(address: string): void;
  now(): number;
}

/**
 * The standby's side of the cluster: which snapshots and stream frames it takes, and from whom, into
 * its replica; and when it asks the active for a fresh snapshot. Frames come checked by their
 * PeerSession (they fit the protocol); these are the rules about who may change the table. A handoff
 * (`!O`) is not taken here: `receive` says one arrived from the followed active, and the Cluster
 * decides whether this node promotes. Runs on the node's event loop, one frame at a time.
 */
export class Standby {
  readonly #deps: StandbyDeps;
  readonly #replica: Replica;
  /** Each peer's latest incoming session (its link to this node). */
  readonly #sessions = new Map<string, PeerSession>();
  /** Since when this standby's replica has not been the live active's. */
  #mismatchSince: number | undefined;
  /** Received an active's snapshot since start: its heartbeats carried everything it knew. */
  #syncedFromActive = false;

  constructor(table: ReplicaTable, deps: StandbyDeps) {
    this.#replica = new Replica(table);
    this.#deps = deps;
  }

  /** The peer whose snapshot the table holds (undefined on an active, or before one). */
  get source(): string | undefined {
    return this.#replica.source;
  }

  /** Grants applied from an active's stream (Replica.grantsApplied). */
  get grantsApplied(): number {
    return this.#replica.grantsApplied;
  }

  get syncedFromActive(): boolean {
    return this.#syncedFromActive;
  }

  /** A peer's link to this node joined (`!J`): the session a resync would drop. */
  joined(session: PeerSession): void {
    this.#sessions.set(session.peer, session);
  }

  /** This node became the active: it follows no one. */
  detach(): void {
    this.#replica.detach();
  }

  /**
   * A stream frame from `session`: applied (and acknowledged) only if it comes from the followed
   * active and this node does not serve. Returns "handoff" for such a `!O`, which the caller takes
   * (or refuses) and acknowledges; "ignored" for anything not from the followed active.
   */
  receive(
    session: PeerSession,
    frame: TableChange | NewEpochFrame | HandoffFrame,
  ): "applied" | "handoff" | "ignored" {
    if (session.peer !== this.#replica.source || this.#deps.serving()) return "ignored";
    if (frame.peer === "O") return "handoff";
    if (frame.peer !== "P") this.#replica.apply(session.peer, frame);
    session.acknowledge(frame.seq);
    return "applied";
  }

  /** A complete snapshot from an active's link: it replaces the replica if it comes from the live active. */
  applySnapshot(session: PeerSession, snapshot: Snapshot): void {
    // Handing off, this node is still the active until the successor acknowledges: a snapshot from
    // anyone (a node that promoted on its own meanwhile) must not replace its table (simulator).
    if (this.#deps.serving()) return;
    this.#deps.learn(session.peer, snapshot.epoch);
    // Only from the active this standby follows: a rival's snapshot held up by a partition and
    // delivered once it healed would replace the true active's replica (found by the simulator).
    const active = this.#deps.membership.liveActive();
    if (active !== undefined && active.address !== session.peer) return;
    this.#syncedFromActive = true;
    // Queued acquires here cannot be served by this standby: send them to the active first.
    this.#deps.redirectPending(session.peer);
    this.#replica.load(session.peer, snapshot);
    this.#deps.follow(session.peer);
    session.acknowledge(snapshot.seq);
  }

  /**
   * A standby whose replica is not the live active's (it followed a rival during a partition, or
   * refused a snapshot while it still believed an older active alive) drops the active's link to it
   * after a peer timeout's worth of mismatch: the active redials and sends a snapshot. At most once
   * per peer timeout, and never while a snapshot is arriving. Called at every heartbeat tick.
   */
  resyncFromActive(): void {
    const { membership } = this.#deps;
    const active = membership.liveActive();
    const now = this.#deps.now();
    if (active === undefined || this.#replica.source === active.address) {
      this.#mismatchSince = undefined;
      return;
    }
    this.#mismatchSince ??= now;
    if (now - this.#mismatchSince < membership.timing.peerTimeoutMs) return;
    const session = this.#sessions.get(active.address);
    if (session === undefined || session.receivingSnapshot) return;
    this.#mismatchSince = now;
    session.close();
  }
}
