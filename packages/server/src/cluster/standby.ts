import type { TimerQueue } from "@lock/deadline-heap";
import type { HandoffFrame, NewEpochFrame } from "@lock/protocol";
import type { Membership } from "./membership.js";
import type { PeerSession, Snapshot } from "./peer/peer-session.js";
import { Replica, type ReplicaTable, type TableChange } from "./replica.js";
import type { LoadPacing } from "./snapshot-load.js";

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
  /** The node's timer queue: a snapshot is loaded a slice per turn on it. */
  readonly timers: TimerQueue;
  /** How a snapshot's load is spread over turns (DEFAULT_LOAD_PACING unless the simulator sets it). */
  readonly loadPacing?: LoadPacing | undefined;
}

/**
 * The standby's side of the cluster: which snapshots and stream frames it takes, and from whom, into
 * its replica; and when it asks the active for a fresh snapshot. Frames come checked by their
 * PeerSession (they fit the protocol); these are the rules about who may change the table. A handoff
 * (`!O`) is not taken here: `receive` says one arrived from the followed active, and the Cluster
 * decides whether this node promotes. Runs on the node's event loop, one frame at a time.
 *
 * A snapshot is loaded over many event-loop turns (Replica): meanwhile the changes that follow it on
 * its link wait for it, nothing is acknowledged (so the active counts this node as synced, and
 * may hand off to it, only once the whole snapshot is in its table), and the Cluster does not promote
 * this node (`loading`, `afterLoad`).
 */
export class Standby {
  readonly #deps: StandbyDeps;
  readonly #replica: Replica;
  /** Each peer's latest incoming session (its link to this node). */
  readonly #sessions = new Map<string, PeerSession>();
  /** Since when this standby's replica has not been the live active's. */
  #mismatchSince: number | undefined;
  /** Loaded an active's snapshot since start: its heartbeats carried everything it knew. */
  #syncedFromActive = false;
  /** Since when the table has been a whole copy of an active's (`syncedSince`); undefined: it is not. */
  #syncedSince: number | undefined;
  /** The snapshot being loaded: the link it came on, and how far that link's stream is to be acknowledged. */
  #loading: { readonly session: PeerSession; seq: number } | undefined;
  /** Called once no snapshot is being loaded any more (`afterLoad`). */
  #afterLoad: Array<() => void> = [];

  constructor(table: ReplicaTable, deps: StandbyDeps) {
    this.#replica = new Replica(table, deps.timers, deps.loadPacing);
    this.#deps = deps;
  }

  /** A snapshot is being loaded: the table is not whole yet. */
  get loading(): boolean {
    return this.#loading !== undefined;
  }

  /** Calls `then` once no snapshot is being loaded (at once if none is). */
  afterLoad(then: () => void): void {
    if (this.#loading === undefined) then();
    else this.#afterLoad.push(then);
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

  /**
   * Since when this standby's table has been a whole copy of an active's: it loaded that active's
   * snapshot and follows its stream (the copy stays whole when that active dies, and while a new
   * snapshot is still arriving, until its load starts replacing the table). Undefined when it is
   * not: before its first snapshot (a restarted node has an empty table), during a load, and on an
   * active. Heartbeats say it (`!B … synced`): a synced standby promotes over one that is not.
   */
  get syncedSince(): number | undefined {
    return this.#syncedSince;
  }

  /** A peer's link to this node joined (`!J`): the session a resync would drop. */
  joined(session: PeerSession): void {
    this.#sessions.set(session.peer, session);
  }

  /** This node became the active (or stops): it follows no one, and a load under way stops where it is. */
  detach(): void {
    this.#replica.detach();
    this.#syncedSince = undefined;
    this.#loadEnded();
  }

  /**
   * A stream frame from `session`: applied (and acknowledged) only if it comes from the followed
   * active, or on the link whose snapshot is being loaded (then after it), and this node does not
   * serve. Returns "handoff" for such a `!O` (not during a load), which the caller takes (or
   * refuses) and acknowledges; "ignored" for anything else.
   */
  receive(
    session: PeerSession,
    frame: TableChange | NewEpochFrame | HandoffFrame,
  ): "applied" | "handoff" | "ignored" {
    if (this.#deps.serving()) return "ignored";
    const loading = this.#loading;
    if (loading !== undefined) {
      // Only the link the snapshot came on; its changes wait for the load, and so does the
      // acknowledgement of everything up to them. A handoff cannot come before that acknowledgement
      // (the active hands off only to a synced standby): one that did would find half a table.
      if (session !== loading.session || frame.peer === "O") return "ignored";
      if (frame.peer !== "P") this.#replica.apply(session.peer, frame);
      loading.seq = frame.seq;
      return "applied";
    }
    if (session.peer !== this.#replica.source) return "ignored";
    if (frame.peer === "O") return "handoff";
    if (frame.peer !== "P") this.#replica.apply(session.peer, frame);
    session.acknowledge(frame.seq);
    return "applied";
  }

  /**
   * A complete snapshot from an active's link: it replaces the replica if it comes from the live
   * active. It is loaded over many turns (a load under way stops for it), then acknowledged.
   */
  applySnapshot(session: PeerSession, snapshot: Snapshot): void {
    // Handing off, this node is still the active until the successor acknowledges: a snapshot from
    // anyone (a node that promoted on its own meanwhile) must not replace its table (simulator).
    if (this.#deps.serving()) return;
    this.#deps.learn(session.peer, snapshot.epoch);
    // Only from the active this standby follows: a rival's snapshot held up by a partition and
    // delivered once it healed would replace the true active's replica (found by the simulator).
    const active = this.#deps.membership.liveActive();
    if (active !== undefined && active.address !== session.peer) return;
    // Queued acquires here cannot be served by this standby: send them to the active first.
    this.#deps.redirectPending(session.peer);
    this.#deps.follow(session.peer);
    const loading = { session, seq: snapshot.seq };
    this.#loading = loading;
    this.#syncedSince = undefined;
    this.#replica.load(session.peer, snapshot, () => {
      this.#syncedFromActive = true;
      this.#syncedSince = this.#deps.now();
      // From a timer, not a read: sent now (the link may have closed meanwhile: then nothing is).
      session.acknowledgeNow(loading.seq);
      this.#loadEnded();
    });
  }

  #loadEnded(): void {
    this.#loading = undefined;
    for (const then of this.#afterLoad.splice(0)) then();
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
    // A snapshot of the active being loaded is no mismatch: its link must not be dropped for it.
    if (
      active === undefined ||
      this.#replica.source === active.address ||
      this.#replica.loadingFrom === active.address
    ) {
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
