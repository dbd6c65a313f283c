import type { Timer } from "@lock/deadline-heap";
import { Ownership } from "../coordination/ownership.js";
import type { LockNode } from "../node.js";
import type { ClusterEvents, ClusterOptions, ClusterServerHooks } from "./cluster-api.js";
import { IncomingPeers } from "./incoming-peers.js";
import { Membership } from "./membership.js";
import type { IncomingConnection, PeerListener } from "./peer/peer-listener.js";
import { lockModesRefusal } from "./peer/peer-version.js";
import { PeerLinks } from "./peer-links.js";
import { PeerReports } from "./peer-reports.js";
import { peerStatus } from "./peer-status.js";
import type { Replicator } from "./replicator.js";
import { RoleChanges, type RoleEffect } from "./roles.js";
import { StallGuard } from "./stall-guard.js";
import { Standby } from "./standby.js";

/**
 * One node's part in the active/standby cluster, wired together: `Membership` decides who should be
 * active, `RoleChanges` carries its decisions out, `PeerLinks` sends heartbeats and (while active)
 * the replication stream, `Standby` takes the active's snapshot and stream into the replica,
 * `IncomingPeers` takes peers' connections and routes their frames to their owners, and `StallGuard` holds an active that
 * did not run for a while. This class runs the heartbeat tick and wires the links together; it is
 * built with its node by `createClusterNode`. docs/consistency.md has the timelines.
 */
export class Cluster {
  readonly #membership: Membership;
  readonly #node: LockNode;
  readonly #replicator: Replicator;
  readonly #events: ClusterEvents;
  readonly #options: ClusterOptions;
  readonly #links: PeerLinks;
  readonly #reports: PeerReports;
  readonly #standby: Standby;
  readonly #stall: StallGuard;
  readonly #roles: RoleChanges;
  readonly #incoming: IncomingPeers;
  /** With a coordinator: the ownership lease (docs/consistency.md, "With a coordinator"). */
  readonly ownership: Ownership | undefined;
  #timer: Timer | undefined;
  /** `stop()` began: this node takes no role it would have to hand straight back. */
  #stopping = false;
  /** An early decision after a refused lease (`retry-lease`), between heartbeat ticks. */
  #leaseRetry: Timer | undefined;

  constructor(
    node: LockNode,
    replicator: Replicator,
    hooks: ClusterServerHooks,
    events: ClusterEvents,
    options: ClusterOptions,
  ) {
    this.#node = node;
    this.#replicator = replicator;
    this.#events = events;
    this.#options = options;
    const membership = new Membership(options.peers, options.advertise, options.timing, node.clock);
    this.#membership = membership;
    this.#stall = new StallGuard(membership);
    this.#reports = new PeerReports(events, node.timers);
    this.#links = new PeerLinks({
      node,
      membership,
      replicator,
      reports: this.#reports,
      open: options.links,
    });
    this.#standby = new Standby(node.holderTable, {
      membership,
      serving: () => node.role === "active" || this.#roles.handingOff,
      learn: (from, epoch) => this.#roles.learn(from, epoch),
      redirectPending: (address) => hooks.redirectPending(address),
      follow: (address) => this.#roles.follow(address),
      now: () => node.clock.now(),
      timers: node.timers,
      loadPacing: options.loadPacing,
    });
    const coordination = options.coordination;
    this.ownership = coordination
      ? new Ownership({
          ...coordination,
          clock: node.clock,
          timers: node.timers,
          events: {
            validityChanged: () => this.#roles.leaseValidityChanged(),
            lost: (holder) => this.#roles.leaseLost(holder),
            unavailable: (operation, error) => events.coordinatorUnavailable?.(operation, error),
          },
        })
      : undefined;
    this.#roles = new RoleChanges({
      node,
      replicator,
      hooks,
      events,
      membership,
      standby: this.#standby,
      links: this.#links.byIndex,
      handoffTimeoutMs: options.handoffTimeoutMs,
      ownership: this.ownership,
      stopping: () => this.#stopping,
      apply: (effect) => this.#apply(effect),
    });
    this.#incoming = new IncomingPeers({
      key: options.key,
      maxSnapshotHolders: options.maxSnapshotHolders,
      membership,
      roles: this.#roles,
      standby: this.#standby,
      links: this.#links,
      reports: this.#reports,
      stopping: () => this.#stopping,
      apply: (effect) => this.#apply(effect),
    });
  }

  start(): void {
    this.#links.open();
    this.#scheduleTick();
  }

  #scheduleTick(): void {
    this.#timer = this.#node.timers.after(this.#options.timing.heartbeatMs, () => {
      this.#scheduleTick();
      this.#tick();
    });
  }

  /**
   * Graceful stop: if this node is the active and a synced standby is live, hand the role to the
   * highest-priority one first, so clients move over with no gap. Then close the peer links and
   * call `then`. Stepped by events (acknowledgements, timers), no promise in between.
   */
  stop(then: () => void): void {
    this.#stopping = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#leaseRetry?.cancel();
    this.#leaseRetry = undefined;
    const close = () => {
      // A last heartbeat tells every peer this node is no longer the active (and names its
      // successor), so none vouches for it to the successor as if it still were: see
      // Membership.steppedDown.
      if (this.#node.role === "standby") this.#links.sendHeartbeat(this.#roles.handingOff, this.#synced);
      this.#links.closeAll();
      this.#reports.flush();
      // A snapshot still being loaded is of no use to a node that leaves: no more turns spent on it.
      this.#standby.detach();
      // A lease still held goes back now, so the next active need not wait for it to expire.
      if (this.ownership?.held) {
        this.#node.setRole("standby", undefined);
        void this.ownership.release().then(then);
      } else then();
    };
    if (this.#node.role !== "active" || this.#roles.busy) {
      close();
      return;
    }
    this.#links.findSyncedSuccessor((successor) => {
      if (successor) this.#roles.handoff(successor, "shutdown", close);
      else close();
    });
  }

  /** The peer side of one incoming connection: its handshake, then its link's frames. */
  peerListener(connection: IncomingConnection): PeerListener {
    return this.#incoming.listen(connection);
  }

  /** Promotions, demotions, handoffs and epoch raises since start (for /status). */
  get counters(): RoleChanges["counters"] {
    return this.#roles.counters;
  }

  /** The peer whose snapshot this standby's table holds (undefined on an active, or before one). */
  get replicaSource(): string | undefined {
    return this.#standby.source;
  }

  /** A standby loading an active's snapshot (a slice per turn): its table is not whole yet. */
  get loadingSnapshot(): boolean {
    return this.#standby.loading;
  }

  /** Grants this node applied from an active's stream while a standby (Replica.grantsApplied). */
  get replicatedGrants(): number {
    return this.#standby.grantsApplied;
  }

  /** Status of every peer, for `/status`. */
  peerStatus() {
    return peerStatus(this.#node, this.#membership, this.#links, this.#replicator);
  }

  /** On a standby: the epoch of the active it follows, as its heartbeats say (LockNode.followedEpoch). */
  followedEpoch(): bigint | undefined {
    return this.#membership.activeEpoch(this.#node.activeAddress);
  }

  /** With a coordinator: an epoch from the store for slots moved to this cluster (RoleChanges.raiseForGainedSlots). */
  raiseForGainedSlots(): Promise<boolean> {
    return this.#roles.raiseForGainedSlots();
  }

  /** Why shared holders and permits cannot be granted (a linked peer of protocol 1), if so. */
  lockModesRefusal = (): string | undefined => lockModesRefusal(this.#links.byIndex.values());

  /**
   * Called before any client byte or deadline is handled (after a SIGCONT the event loop runs I/O
   * before timers): with a coordinator, an active whose lease is not valid by its clock holds;
   * without, a stall of this process (StallGuard) holds an active.
   */
  guardGrants(): void {
    const now = this.#node.clock.now();
    if (this.ownership) {
      if (this.#node.role === "active" && !this.ownership.valid(now)) this.#node.hold("lease");
      return;
    }
    const gapMs = this.#stall.check(now);
    if (gapMs === undefined) return;
    // An active grants nothing until one peer timeout of fresh heartbeats confirmed its role
    // (or demoted it, or moved it above a rival's epoch): see #tick.
    if (this.#node.role === "active") this.#node.hold("stall");
    this.#events.stalled(Math.round(gapMs), this.#node.role);
  }

  /** This standby's table is a whole copy of an active's (said in its heartbeats). */
  get #synced(): boolean {
    return this.#standby.syncedSince !== undefined;
  }

  #tick(): void {
    this.guardGrants();
    this.#stall.ticked(this.#node.clock.now());
    this.#links.sendHeartbeat(this.#roles.handingOff, this.#synced);
    for (const peer of this.#membership.livenessChanges())
      this.#events.peerLiveness(peer.address, this.#membership.isLive(peer), peer.role);
    if (this.#node.role === "standby" && !this.#roles.busy) {
      this.#roles.follow((this.#membership.liveActive() ?? this.#membership.vouchedActive())?.address);
      this.#standby.resyncFromActive();
    }
    if (this.#node.role === "active") this.#links.snapshotNewStandbys();
    this.#decide();
  }

  #decide(): void {
    this.#apply(
      this.#roles.decide(
        (peer) => this.#links.isSyncedStandby(peer),
        () => this.#stall.confirmed(),
      ),
    );
  }

  /**
   * What a role change left to do: a new active announces its epoch with a tick at once; a refused
   * lease is asked for again a fifth of a heartbeat later (the decision is made afresh then).
   */
  #apply(effect: RoleEffect | undefined): void {
    if (effect === "announce") this.#tick();
    else if (effect === "retry-lease" && !this.#stopping && this.#leaseRetry === undefined) {
      this.#leaseRetry = this.#node.timers.after(this.#options.timing.heartbeatMs / 5, () => {
        this.#leaseRetry = undefined;
        if (!this.#stopping && !this.#roles.busy) this.#decide();
      });
    }
  }
}
