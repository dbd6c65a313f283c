import type { Timer } from "@lock/deadline-heap";
import type { NodeRole } from "@lock/protocol";
import type { LockNode } from "../node.js";
import type { ClusterEvents, ClusterOptions, ClusterServerHooks } from "./cluster-api.js";
import { Membership } from "./membership.js";
import { ListenerHandshake } from "./peer/handshake.js";
import { type IncomingConnection, PeerListener, type PeerListenerDeps } from "./peer/peer-listener.js";
import { PeerLinks } from "./peer-links.js";
import { PeerReports } from "./peer-reports.js";
import type { PeerSession, PeerSessionHandler, SessionFrame, Snapshot } from "./peer-session.js";
import { peerStatus } from "./peer-status.js";
import type { Replicator } from "./replicator.js";
import { RoleChanges } from "./roles.js";
import { StallGuard } from "./stall-guard.js";
import { Standby } from "./standby.js";

export type { ClusterEvents, ClusterOptions, ClusterServerHooks } from "./cluster-api.js";

/**
 * One node's part in the active/standby cluster, wired together: `Membership` decides who should be
 * active, `RoleChanges` carries its decisions out, `PeerLinks` sends heartbeats and (while active)
 * the replication stream, `Standby` takes the active's snapshot and stream into the replica, and
 * `StallGuard` holds an active that did not run for a while. This class runs the heartbeat tick and
 * routes each peer frame to its owner. docs/consistency.md has the timelines.
 */
export class Cluster implements PeerSessionHandler {
  readonly membership: Membership;
  readonly #node: LockNode;
  readonly #replicator: Replicator;
  readonly #events: ClusterEvents;
  readonly #options: ClusterOptions;
  readonly #links: PeerLinks;
  readonly #reports: PeerReports;
  readonly #standby: Standby;
  readonly #stall: StallGuard;
  readonly #roles: RoleChanges;
  readonly #listening: PeerListenerDeps;
  #timer: Timer | undefined;
  /** `stop()` began: this node takes no role it would have to hand straight back. */
  #stopping = false;

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
    this.membership = membership;
    this.#stall = new StallGuard(membership);
    this.#reports = new PeerReports(events, node.timers);
    this.#links = new PeerLinks({
      node,
      membership,
      replicator,
      reports: this.#reports,
      open: options.links,
    });
    this.#standby = new Standby(node.engine, {
      membership,
      serving: () => node.role === "active" || this.#roles.handingOff,
      learn: (from, epoch) => this.#roles.learn(from, epoch),
      redirectPending: (address) => hooks.redirectPending(address),
      follow: (address) => this.#follow(address),
      now: () => node.clock.now(),
    });
    this.#roles = new RoleChanges({
      node,
      replicator,
      hooks,
      events,
      membership,
      standby: this.#standby,
      links: this.#links.byIndex,
      handoffTimeoutMs: options.handoffTimeoutMs,
      tick: () => this.#tick(),
      follow: (address) => this.#follow(address),
    });
    this.#listening = {
      handshake: () =>
        new ListenerHandshake(options.key, membership.selfAddress, (address) => {
          const peer = membership.peerByAddress(address);
          return peer !== undefined && peer.index !== membership.self;
        }),
      handler: this,
      rejected: (remote, claimed, reason) => this.#reports.rejected(remote, claimed, reason),
      maxSnapshotHolders: options.maxSnapshotHolders,
    };
    node.beforeDeadlines = () => this.guardStall();
    node.onServing = () => events.serving(node.epoch);
    node.onEpochRenewed = (epoch) => replicator.announceEpoch(epoch);
    node.followedEpoch = () => {
      const active =
        node.activeAddress === undefined ? undefined : membership.peerByAddress(node.activeAddress);
      return active?.role === "active" ? active.epoch : undefined;
    };
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
   * highest-priority one first, so clients move over with no gap. Then close the peer links.
   */
  stop(): Promise<void> {
    return new Promise((resolve) => this.stopThen(resolve));
  }

  /** `stop()`, stepped by events (acknowledgements, timers): `then` is called once it is done. */
  stopThen(then: () => void): void {
    this.#stopping = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    const close = () => {
      // A last heartbeat tells every peer this node is no longer the active (and names its
      // successor), so none vouches for it to the successor as if it still were: see
      // Membership.steppedDown.
      if (this.#node.role === "standby") this.#links.sendHeartbeat(this.#roles.handingOff);
      this.#links.closeAll();
      this.#reports.flush();
      then();
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
    return new PeerListener(this.#listening, connection);
  }

  /** PeerSessionHandler: an authenticated incoming link broke the protocol. */
  violated(session: PeerSession, reason: string): void {
    this.#reports.violation(session.peer, reason);
  }

  /** Promotions, demotions, handoffs and epoch raises since start (for /status). */
  get counters(): RoleChanges["counters"] {
    return this.#roles.counters;
  }

  /** The peer whose snapshot this standby's table holds (undefined on an active, or before one). */
  get replicaSource(): string | undefined {
    return this.#standby.source;
  }

  /** Grants this node applied from an active's stream while a standby (Replica.grantsApplied). */
  get replicatedGrants(): number {
    return this.#standby.grantsApplied;
  }

  isMember(address: string): boolean {
    return this.membership.peerByAddress(address) !== undefined;
  }

  /** Status of every peer, for `/status`. */
  peerStatus() {
    return peerStatus(this.#node, this.membership, this.#links, this.#replicator);
  }

  /**
   * A frame from a peer's incoming connection (its heartbeats; the active's stream), checked by
   * its PeerSession: the sender proved it is `session.peer`, and the frame fits the stream.
   */
  onPeerFrame(session: PeerSession, frame: SessionFrame): void {
    switch (frame.peer) {
      case "J":
        this.#standby.joined(session);
        this.#heard(session.peer, frame.role, frame.epoch, undefined, frame.highest);
        return;
      case "B":
        this.#heard(session.peer, frame.role, frame.epoch, frame.active, frame.highest);
        return;
    }
    // An epoch is learned from whoever tells it, followed or not, standby or active: a rival active
    // announcing its raised epoch (`!P`) to a node it still streams to must move that node above it
    // before its next grant, not only at the rival's next heartbeat (found by the simulator).
    if (frame.peer === "P" || frame.peer === "O") this.#roles.learn(session.peer, frame.epoch);
    if (this.#standby.receive(session, frame) === "handoff") this.#takeHandoff(session, frame.seq);
  }

  /** The followed active hands its role to this node (`!O`). */
  #takeHandoff(session: PeerSession, seq: number): void {
    if (this.#stopping) {
      // Leaving: refuse by dropping the link, so the sender's handoff fails now and it stays
      // the active, instead of waiting out its handoff timeout for an acknowledgement.
      session.close();
      return;
    }
    this.#roles.takeHandoff(session.peer);
    // Acknowledge at once: the old active redirects its clients only after this.
    session.acknowledgeNow(seq);
  }

  /** A complete snapshot from an active's link (Standby decides whether it replaces the replica). */
  applySnapshot(session: PeerSession, snapshot: Snapshot): void {
    this.#standby.applySnapshot(session, snapshot);
  }

  #heard(address: string, role: NodeRole, epoch: bigint, active: string | undefined, highest: bigint): void {
    const heard = this.membership.heard(address, role, epoch, active);
    if (!heard) return;
    // A frame's epoch is never above its highest (PeerSession checks it): the highest covers both.
    this.#roles.learn(address, highest);
    if (heard.previousRole === "active" && role === "standby") this.#links.needsSnapshot(heard.peer);
  }

  /** Checks for a stall of this process (StallGuard); called before any client byte or deadline. */
  guardStall(): void {
    const gapMs = this.#stall.check(this.#node.clock.now());
    if (gapMs === undefined) return;
    // An active grants nothing until one peer timeout of fresh heartbeats confirmed its role
    // (or demoted it, or moved it above a rival's epoch): see #tick.
    if (this.#node.role === "active") this.#node.hold("stall");
    this.#events.stalled(Math.round(gapMs), this.#node.role);
  }

  #tick(): void {
    this.guardStall();
    this.#stall.ticked(this.#node.clock.now());
    this.#links.sendHeartbeat(this.#roles.handingOff);
    for (const peer of this.membership.livenessChanges())
      this.#events.peerLiveness(peer.address, this.membership.isLive(peer), peer.role);
    if (this.#node.role === "standby" && !this.#roles.busy) {
      this.#follow((this.membership.liveActive() ?? this.membership.vouchedActive())?.address);
      this.#standby.resyncFromActive();
    }
    if (this.#node.role === "active") this.#links.snapshotNewStandbys();
    this.#roles.decide(
      (peer) => this.#links.isSyncedStandby(peer),
      () => this.#stall.confirmed(),
    );
  }

  #follow(active: string | undefined): void {
    if (this.#node.activeAddress === active) return;
    this.#node.activeAddress = active;
    this.#events.following(active);
  }
}
