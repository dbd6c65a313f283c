import type { NodeRole } from "@lock/protocol";
import type { Clock } from "../engine/clock.js";

/**
 * Who is alive and who should be active: the cluster's promotion rules as a pure unit, driven by
 * heartbeats and a clock. No quorum: the peers list order is the priority (index 0 highest), and the
 * highest-priority live node is the active.
 *
 * `decide()` is called on every heartbeat tick and after every heartbeat received; it returns the
 * one thing this node should do now. It never acts itself.
 */
export interface ClusterTiming {
  /** How often each node sends a heartbeat to every peer. */
  readonly heartbeatMs: number;
  /** A peer not heard from for this long is dead. Also the startup grace before a first promotion. */
  readonly peerTimeoutMs: number;
}

export const DEFAULT_CLUSTER_TIMING: ClusterTiming = { heartbeatMs: 100, peerTimeoutMs: 500 };

export interface PeerState {
  readonly index: number;
  readonly address: string;
  lastHeardAt: number | undefined;
  role: NodeRole | undefined;
  epoch: bigint;
  /** The active this peer knows of. */
  active: string | undefined;
  /** When this peer handed the active role to this node (`steppedDown`), if it did. */
  steppedDownAt: number | undefined;
  /**
   * Its latest heartbeat said its table is (true) or is not (false) a whole copy of an active's;
   * undefined: not said (lockd 0.1.0), or not heard yet.
   */
  synced: boolean | undefined;
}

/** This node's own state, as `decide` needs it. */
export interface SelfState {
  readonly role: NodeRole;
  readonly epoch: bigint;
  /** The highest epoch this node has taken or heard of (EpochKeeper). */
  readonly highestKnown: bigint;
  /** True while a handoff or promotion is under way: decide nothing new. */
  readonly busy: boolean;
  /**
   * A standby: since when its table has been a whole copy of an active's (Standby.syncedSince);
   * undefined when it is not. Omitted: treated as synced long ago (a caller without the notion).
   */
  readonly syncedSince?: number | undefined;
}

export type Decision =
  | { readonly action: "none" }
  /** No live active and no live higher-priority peer: become the active. */
  | { readonly action: "promote" }
  /** A live higher-priority node is active: step down and follow it. */
  | { readonly action: "demote"; readonly to: PeerState }
  /** Some node took an epoch above this active's (a healed partition, a stall): stay, above `above`. */
  | { readonly action: "raise-epoch"; readonly above: bigint }
  /** A live, synced higher-priority standby exists: hand the active role to it. */
  | { readonly action: "handoff"; readonly to: PeerState };

/** What a heartbeat changed (`Membership.heard`). */
export interface HeardTransition {
  readonly peer: PeerState;
  readonly previousRole: NodeRole | undefined;
}

export class Membership {
  readonly peers: readonly PeerState[];
  readonly self: number;
  readonly timing: ClusterTiming;
  readonly #clock: Clock;
  /** A standby promotes no earlier than this: one peer timeout after start, or after a stall. */
  #listenUntil: number;
  /** Peers last reported live by `livenessChanges`. */
  readonly #reportedLive = new Set<number>();
  /** Peers whose reachable link already extended the listening period (once each). */
  readonly #waitedFor = new Set<number>();
  /** Up to when this node surely read what its peers sent (`readUpTo`); undefined: now. */
  #readUpTo: number | undefined;

  constructor(addresses: readonly string[], self: string, timing: ClusterTiming, clock: Clock) {
    const index = addresses.indexOf(self);
    if (index < 0) throw new Error(`this node (${self}) is not in the peers list (${addresses.join(",")})`);
    if (new Set(addresses).size !== addresses.length) throw new Error("the peers list has duplicates");
    this.self = index;
    this.timing = timing;
    this.#clock = clock;
    this.#listenUntil = clock.now() + timing.peerTimeoutMs;
    this.peers = addresses.map((address, i) => ({
      index: i,
      address,
      lastHeardAt: undefined,
      role: undefined,
      epoch: 0n,
      active: undefined,
      steppedDownAt: undefined,
      synced: undefined,
    }));
  }

  get selfAddress(): string {
    return this.peers[this.self]!.address;
  }

  /**
   * Every peer has been heard since this node started, so every epoch taken before now reached it
   * (heartbeats carry each sender's highest known epoch). A lone restart is not informed.
   */
  heardEveryPeer(): boolean {
    return this.peers.every((peer) => peer.index === this.self || peer.lastHeardAt !== undefined);
  }

  /** Still within the listening period after start or a stall (`resumedAfterStall`). */
  get listening(): boolean {
    return this.#clock.now() < this.#listenUntil;
  }

  peerByAddress(address: string): PeerState | undefined {
    return this.peers.find((peer) => peer.address === address);
  }

  /** Another node's `--peers` entry (not this node's own): who may complete the peer handshake. */
  isOtherPeer(address: string): boolean {
    const peer = this.peerByAddress(address);
    return peer !== undefined && peer.index !== this.self;
  }

  /** The epoch `address` announces as the active, if its latest heartbeat says it is one. */
  activeEpoch(address: string | undefined): bigint | undefined {
    const peer = address === undefined ? undefined : this.peerByAddress(address);
    return peer?.role === "active" ? peer.epoch : undefined;
  }

  /**
   * Records a heartbeat (or join) from `address` and returns what changed: the peer, and the role it
   * had before. Unknown senders are ignored.
   */
  heard(
    address: string,
    role: NodeRole,
    epoch: bigint,
    active: string | undefined,
    synced?: boolean,
  ): HeardTransition | undefined {
    const peer = this.peerByAddress(address);
    if (peer === undefined || peer.index === this.self) return undefined;
    const previousRole = peer.role;
    peer.lastHeardAt = this.#clock.now();
    peer.role = role;
    peer.epoch = epoch;
    peer.active = active;
    peer.synced = synced;
    return { peer, previousRole };
  }

  /**
   * Records a role a peer took without a heartbeat saying so yet: the old active of a handoff is a
   * standby as it sends `!O`; the successor of this node's handoff is the active once it acknowledged.
   * Its liveness is unchanged.
   */
  assumeRole(peer: PeerState, role: NodeRole): void {
    peer.role = role;
  }

  /**
   * `peer` handed the active role to this node: it is a standby from now on (see `assumeRole`), and
   * for a while hearsay that it is active is stale. A third node that heard its last "active"
   * heartbeat keeps naming it until that heartbeat is a peer timeout old, which can outlast this
   * node's own view of it once it stops (it exits after a handoff): that hearsay must not demote the
   * successor, which would drop every holder it was handed.
   */
  steppedDown(peer: PeerState): void {
    this.assumeRole(peer, "standby");
    peer.steppedDownAt = this.#clock.now();
  }

  /**
   * Whether hearsay naming `peer` as active may predate its handoff to this node: the last "active"
   * heartbeat it sent (before the handoff) lives at most one peer timeout at a third node, plus a
   * heartbeat interval before that node repeats it and the time on the wire; twice the peer timeout
   * covers both.
   */
  #handedOffRecently(peer: PeerState): boolean {
    return (
      peer.steppedDownAt !== undefined &&
      this.#clock.now() - peer.steppedDownAt < 2 * this.timing.peerTimeoutMs
    );
  }

  /**
   * Peers whose liveness changed since the last call, once per change. Right after a stall every
   * peer looks silent until this node reads its sockets again: losses are reported only once the
   * listening period is over.
   */
  livenessChanges(): PeerState[] {
    const changed: PeerState[] = [];
    for (const peer of this.peers) {
      if (peer.index === this.self) continue;
      const live = this.isLive(peer);
      if (live === this.#reportedLive.has(peer.index)) continue;
      if (!live && this.listening) continue;
      if (live) this.#reportedLive.add(peer.index);
      else this.#reportedLive.delete(peer.index);
      changed.push(peer);
    }
    return changed;
  }

  /** Heard within a peer timeout before `at` (default: now). */
  isLive(peer: PeerState, at = this.#clock.now()): boolean {
    if (peer.index === this.self) return true;
    return peer.lastHeardAt !== undefined && at - peer.lastHeardAt <= this.timing.peerTimeoutMs;
  }

  /**
   * The highest-priority active that a live peer vouches for: one heard directly (`liveActive`), or
   * one that a live peer's heartbeat names as the active it hears. A node cut off from the active in
   * one direction only still learns from the others that it is alive. Heartbeats name only actives
   * their sender hears itself, so a dead node cannot be kept alive by nodes vouching for each other.
   */
  vouchedActive(at = this.#clock.now()): PeerState | undefined {
    let best: PeerState | undefined;
    for (const peer of this.peers) {
      if (peer.index === this.self || !this.isLive(peer, at)) continue;
      const named =
        peer.role === "active"
          ? peer
          : peer.active === undefined
            ? undefined
            : this.peerByAddress(peer.active);
      if (named === undefined || named.index === this.self) continue;
      // What this node hears itself beats hearsay: a node it hears as a standby (it just handed
      // off, say) is not an active, whatever a peer last heard from it; nor is one that handed off
      // to this node and stopped, until a third node's memory of it as active has run out.
      if (named.role !== "active" && (this.isLive(named, at) || this.#handedOffRecently(named))) continue;
      if (best === undefined || named.index < best.index) best = named;
    }
    return best;
  }

  /** The live active with the highest priority other than this node, if any. */
  liveActive(): PeerState | undefined {
    return this.peers.find((peer) => peer.index !== this.self && peer.role === "active" && this.isLive(peer));
  }

  /**
   * This node's own link to `peer` is up (its handshake proved the peer is running), but the peer
   * has not been heard since start: its heartbeats come on its link to this node, which it redials
   * only now that this node is back. A node that just restarted and promoted before hearing a live
   * active would make that active step down and drop every holder it has, so it listens one more
   * peer timeout for such a peer (once per peer, so a silent one delays a promotion only once).
   */
  reachable(peer: PeerState): void {
    if (peer.lastHeardAt !== undefined || this.#waitedFor.has(peer.index)) return;
    this.#waitedFor.add(peer.index);
    this.#listenUntil = Math.max(this.#listenUntil, this.#clock.now() + this.timing.peerTimeoutMs);
  }

  /**
   * This node was not running for a while (SIGSTOP, a VM pause, a long GC): every peer looks silent
   * only because it could not listen. Like at start, it hears the others for one peer timeout before
   * it may promote, instead of promoting on a stale view (heartbeats wait unread in its sockets).
   * An active in that state does not grant while `listening` (Cluster holds it): a standby may have
   * promoted meanwhile, and the fresh heartbeats decide whether it steps down or moves above.
   */
  resumedAfterStall(): void {
    this.#listenUntil = Math.max(this.#listenUntil, this.#clock.now() + this.timing.peerTimeoutMs);
  }

  /**
   * This node surely read every heartbeat its peers sent before `at` (StallGuard: the previous tick,
   * when this one ran late; now otherwise). A node that did not run for a while, though for less
   * than the peer timeout (a long GC, a loaded machine, a big snapshot applied in one go), has
   * heartbeats waiting unread in its sockets: the time it spent not reading is its own silence, not
   * its peers'. A standby judges who is silent as of `at`, so it never promotes over an active whose
   * heartbeats it simply had not read yet (a real failover waits one heartbeat interval longer).
   */
  readUpTo(at: number): void {
    this.#readUpTo = at;
  }

  /** `synced(peer)`: the peer has applied this node's snapshot (only asked while active). */
  decide(me: SelfState, synced: (peer: PeerState) => boolean): Decision {
    if (me.busy) return { action: "none" };
    // Only a standby's view waits for what it has read: an active that judged a higher-priority
    // peer live on a stale view would step down for it and drop its holders.
    const now = this.#clock.now();
    const at = me.role === "standby" ? Math.min(now, this.#readUpTo ?? now) : now;
    const others = this.peers.filter((peer) => peer.index !== this.self && this.isLive(peer, at));
    const higher = others.filter((peer) => peer.index < this.self);
    // A higher-priority active that this node cannot hear (a one-way cut) but a live peer can: this
    // node must not be a rival to it, or the two would raise their epochs above each other forever.
    const vouched = this.vouchedActive(at);
    const vouchedHigher = vouched !== undefined && vouched.index < this.self ? vouched : undefined;
    if (me.role === "active") {
      const higherActive = higher.find((peer) => peer.role === "active") ?? vouchedHigher;
      if (higherActive) return { action: "demote", to: higherActive };
      // Some node took a later epoch (a rival active after a partition or a stall, just demoted or
      // not) and may have issued tokens this node's next ones would not exceed: move above it first.
      if (me.highestKnown > me.epoch) return { action: "raise-epoch", above: me.highestKnown };
      const successor = higher.find((peer) => peer.role === "standby" && synced(peer));
      if (successor) return { action: "handoff", to: successor };
      return { action: "none" };
    }
    // A standby waits one timeout after start (or a stall) to hear from the others before it may promote.
    if (this.#clock.now() < this.#listenUntil) return { action: "none" };
    if (higher.some((peer) => this.#blocksPromotion(peer, me))) return { action: "none" };
    if (others.some((peer) => peer.role === "active")) return { action: "none" };
    if (vouchedHigher !== undefined) return { action: "none" };
    if (!this.#syncedForAll(me) && others.some((peer) => peer.role === "standby" && peer.synced === true))
      return { action: "none" };
    return { action: "promote" };
  }

  /**
   * Whether live higher-priority `peer` keeps this standby from promoting: it does, unless this
   * standby is synced and `peer` says it is a standby that is not (just restarted, or loading a
   * snapshot). Promoting with no copy of the table would lose every holder that this standby has.
   */
  #blocksPromotion(peer: PeerState, me: SelfState): boolean {
    const meSynced = !("syncedSince" in me) || me.syncedSince !== undefined;
    return !(meSynced && peer.role === "standby" && peer.synced === false);
  }

  /**
   * This standby is synced, and has been for a peer timeout: every live peer has heard it say so.
   * Until then a synced standby of lower priority may still count it as not synced and promote
   * itself, so this one waits for that (a split that the priority rule would then end by a demotion
   * that drops that node's grants); a lone unsynced node defers to a synced one only while one lives.
   */
  #syncedForAll(me: SelfState): boolean {
    if (!("syncedSince" in me)) return true;
    return me.syncedSince !== undefined && this.#clock.now() - me.syncedSince >= this.timing.peerTimeoutMs;
  }
}
