import type { Timer } from "@lock/deadline-heap";
import { encodePeer, type NodeRole } from "@lock/protocol";
import { ListenerHandshake } from "../net/peer-auth.js";
import type { LockNode } from "../node.js";
import type { ClusterEvents, ClusterOptions, ClusterServerHooks } from "./cluster-api.js";
import type { ClusterLink } from "./link.js";
import { Membership, type PeerState } from "./membership.js";
import { PeerReports } from "./peer-reports.js";
import type { PeerSession, PeerSessionHandler, SessionFrame, Snapshot } from "./peer-session.js";
import { Replica } from "./replica.js";
import type { Replicator } from "./replicator.js";
import { RoleChanges } from "./roles.js";
import { StallGuard } from "./stall-guard.js";

export type { ClusterEvents, ClusterOptions, ClusterServerHooks } from "./cluster-api.js";

/**
 * One node's part in the active/standby cluster: heartbeats to every peer, the decisions of
 * `Membership` carried out (promote, demote, raise the epoch, hand off), the replication stream
 * while active, and the replica applied while standby. docs/consistency.md has the timelines.
 */
export class Cluster implements PeerSessionHandler {
  readonly membership: Membership;
  readonly #node: LockNode;
  readonly #replicator: Replicator;
  readonly #hooks: ClusterServerHooks;
  readonly #events: ClusterEvents;
  readonly #options: ClusterOptions;
  readonly #links = new Map<number, ClusterLink>();
  readonly #reports: PeerReports;
  readonly #replica: Replica;
  readonly #stall: StallGuard;
  /** Each peer's latest incoming session (its link to this node). */
  readonly #sessions = new Map<string, PeerSession>();
  /** Since when this standby's replica has not been the live active's. */
  #replicaMismatchSince: number | undefined;
  #timer: Timer | undefined;
  readonly #roles: RoleChanges;
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
    this.#hooks = hooks;
    this.#events = events;
    this.#options = options;
    this.membership = new Membership(options.peers, options.advertise, options.timing, node.clock);
    this.#replica = new Replica(node.engine);
    this.#stall = new StallGuard(this.membership);
    this.#reports = new PeerReports(events, () => node.clock.now());
    this.#roles = new RoleChanges({
      node,
      replicator,
      hooks,
      events,
      membership: this.membership,
      replica: this.#replica,
      links: this.#links,
      handoffTimeoutMs: options.handoffTimeoutMs,
      tick: () => this.#tick(),
      follow: (address) => this.#follow(address),
    });
    node.beforeDeadlines = () => this.guardStall();
    node.onServing = () => this.#events.serving(node.epoch);
    node.onEpochRenewed = (epoch) => this.#replicator.announceEpoch(epoch);
    node.followedEpoch = () => {
      const active =
        node.activeAddress === undefined ? undefined : this.membership.peerByAddress(node.activeAddress);
      return active?.role === "active" ? active.epoch : undefined;
    };
  }

  start(): void {
    for (const peer of this.membership.peers) {
      if (peer.index === this.membership.self) continue;
      const link = this.#options.links(peer.address, {
        hello: () =>
          encodePeer({
            peer: "J",
            node: this.membership.selfAddress,
            role: this.#node.role,
            epoch: this.#node.epoch,
            highest: this.#node.epochs.highest,
          }),
        onConnect: (connected) => {
          this.#replicator.disconnected(connected);
          this.membership.reachable(peer);
        },
        onDisconnect: (gone) => this.#replicator.disconnected(gone),
        onAck: (from, seq) => {
          // Nothing past what this node has sent can be acknowledged.
          if (seq > this.#replicator.seq) {
            this.#reports.violation(
              from.address,
              `!K ${seq} beyond the stream sent (${this.#replicator.seq})`,
            );
            from.reset();
            return;
          }
          this.#replicator.acknowledged(from, seq);
        },
        onRefused: (from, reply) => this.#reports.refused(from.address, reply),
        onViolation: (from, reason) => this.#reports.violation(from.address, reason),
      });
      this.#links.set(peer.index, link);
    }
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
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    if (this.#node.role === "active" && !this.#roles.busy) {
      const successor = await this.#syncedSuccessor();
      if (successor) await this.#roles.handoff(successor, "shutdown");
    }
    // A last heartbeat tells every peer this node is no longer the active (and names its
    // successor), so none vouches for it to the successor as if it still were: see
    // Membership.steppedDown.
    if (this.#node.role === "standby") this.#sendHeartbeat();
    for (const link of this.#links.values()) {
      link.flush();
      link.close();
    }
    this.#reports.flush();
  }

  /** The listening side of the peer handshake, for one incoming connection. */
  listenerHandshake(): ListenerHandshake {
    return new ListenerHandshake(this.#options.key, this.membership.selfAddress, (address) => {
      const peer = this.membership.peerByAddress(address);
      return peer !== undefined && peer.index !== this.membership.self;
    });
  }

  /** An incoming connection refused as a peer (see `ClusterEvents.peerRejected`). */
  rejected(remote: string, node: string | undefined, reason: string): void {
    this.#reports.rejected(remote, node, reason);
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
    return this.#replica.source;
  }

  /** Grants this node applied from an active's stream while a standby (Replica.grantsApplied). */
  get replicatedGrants(): number {
    return this.#replica.grantsApplied;
  }

  isMember(address: string): boolean {
    return this.membership.peerByAddress(address) !== undefined;
  }

  /**
   * The highest-priority synced standby. A live standby that has not acknowledged its snapshot yet
   * (it just joined) gets up to one peer timeout to do so: handing off beats a failover.
   */
  async #syncedSuccessor(): Promise<PeerState | undefined> {
    const others = this.membership.peers.filter((peer) => peer.index !== this.membership.self);
    const deadline = this.#node.clock.now() + this.#options.timing.peerTimeoutMs;
    for (;;) {
      const synced = others.find((peer) => this.#isSyncedStandby(peer));
      if (synced) return synced;
      const joining = others.some((peer) => peer.role === "standby" && this.membership.isLive(peer));
      if (!joining || this.#node.clock.now() >= deadline) return undefined;
      this.#snapshotNewStandbys();
      // Its acknowledgement is what makes it synced; the timeout re-checks liveness meanwhile.
      await this.#replicator.nextAck(10);
    }
  }

  /** Status of every peer, for `/status`. */
  peerStatus() {
    return this.membership.peers.map((peer) => {
      const link = this.#links.get(peer.index);
      const self = peer.index === this.membership.self;
      return {
        address: peer.address,
        priority: peer.index,
        self,
        role: self ? this.#node.role : (peer.role ?? null),
        // A standby's own: the epoch of the active it follows (LockNode.reportedEpoch). Another
        // standby's heartbeats carry its table's epoch, which means nothing: see `follows`.
        epoch: (self ? this.#node.reportedEpoch : peer.epoch).toString(),
        /** The active this peer follows, as its heartbeats say (this node's own for its row). */
        follows: self
          ? this.#node.role === "standby"
            ? (this.#node.activeAddress ?? null)
            : null
          : peer.role === "standby"
            ? (peer.active ?? null)
            : null,
        live: this.membership.isLive(peer),
        linkConnected: self ? null : (link?.connected ?? false),
        replicationLag: link && this.#node.role === "active" ? (this.#replicator.lag(link) ?? null) : null,
      };
    });
  }

  /**
   * A frame from a peer's incoming connection (its heartbeats; the active's stream), checked by
   * its PeerSession: the sender proved it is `session.peer`, and the frame fits the stream.
   */
  onPeerFrame(session: PeerSession, frame: SessionFrame): void {
    switch (frame.peer) {
      case "J":
        this.#sessions.set(session.peer, session);
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
    if (session.peer !== this.#replica.source || this.#node.role === "active") return;
    switch (frame.peer) {
      case "G":
      case "F":
      case "X":
        this.#replica.apply(session.peer, frame);
        break;
      case "P":
        break;
      case "O": {
        if (this.#stopping) {
          // Leaving: refuse by dropping the link, so the sender's handoff fails now and it stays
          // the active, instead of waiting out its handoff timeout for an acknowledgement.
          session.close();
          return;
        }
        // The sender stops serving as it sends this; its earlier heartbeats said "active".
        // It follows us from here, with the snapshot the promotion sends: its next heartbeat
        // ("standby") is no step down from active that would need another one.
        const from = this.membership.peerByAddress(session.peer);
        if (from) this.membership.steppedDown(from);
        // The old active's knowledge is this node's now (`!O` carries its highest epoch): informed.
        this.#roles.promote("handoff", true);
        // Acknowledge at once: the old active redirects its clients only after this.
        session.acknowledgeNow(frame.seq);
        return;
      }
    }
    session.acknowledge(frame.seq);
  }

  /** A complete snapshot from an active's link: it replaces this standby's replica. */
  applySnapshot(session: PeerSession, snapshot: Snapshot): void {
    // Handing off, this node is still the active until the successor acknowledges: a snapshot from
    // anyone (a node that promoted on its own meanwhile) must not replace its table (simulator).
    if (this.#node.role === "active" || this.#roles.handingOff) return;
    this.#roles.learn(session.peer, snapshot.epoch);
    // Only from the active this standby follows: a rival's snapshot held up by a partition and
    // delivered once it healed would replace the true active's replica (found by the simulator).
    const active = this.membership.liveActive();
    if (active !== undefined && active.address !== session.peer) return;
    this.#roles.syncedFromActive = true;
    // Queued acquires here cannot be served by this standby: send them to the active first.
    this.#hooks.redirectPending(session.peer);
    this.#replica.load(session.peer, snapshot);
    this.#follow(session.peer);
    session.acknowledge(snapshot.seq);
  }

  #heard(address: string, role: NodeRole, epoch: bigint, active: string | undefined, highest: bigint): void {
    const heard = this.membership.heard(address, role, epoch, active);
    if (!heard) return;
    this.#roles.learn(address, highest > epoch ? highest : epoch);
    // A peer that was active and is now a standby holds someone else's state: it needs our snapshot.
    const link = this.#links.get(heard.peer.index);
    if (heard.previousRole === "active" && role === "standby" && link) this.#replicator.disconnected(link);
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
    this.#sendHeartbeat();
    this.#reportLiveness();
    if (this.#node.role === "standby" && !this.#roles.busy) {
      this.#follow((this.membership.liveActive() ?? this.membership.vouchedActive())?.address);
      this.#resyncFromActive();
    }
    if (this.#node.role === "active") this.#snapshotNewStandbys();
    const decision = this.membership.decide(
      {
        role: this.#node.role,
        epoch: this.#node.epoch,
        highestKnown: this.#node.epochs.highest,
        busy: this.#roles.busy,
      },
      (peer) => this.#isSyncedStandby(peer),
    );
    const held = this.#node.isHeld("stall");
    // A held active steps down or moves above a rival at once, but hands off only once confirmed.
    if (!(held && decision.action === "handoff")) this.#roles.act(decision);
    if (held && this.#node.role === "active" && this.#stall.confirmed()) this.#node.release("stall");
  }

  #sendHeartbeat(): void {
    const heardActive =
      this.#node.role === "active" ? this.membership.selfAddress : this.membership.liveActive()?.address;
    const heartbeat = encodePeer({
      peer: "B",
      node: this.membership.selfAddress,
      // While handing off this node no longer serves: the successor must not see a rival active.
      role: this.#roles.handingOff ? "standby" : this.#node.role,
      epoch: this.#node.epoch,
      // Only an active this node hears itself (or itself): see Membership.vouchedActive.
      ...(heardActive ? { active: heardActive } : {}),
      highest: this.#node.epochs.highest,
    });
    for (const link of this.#links.values()) link.send(heartbeat);
  }

  /**
   * A standby whose replica is not the live active's (it followed a rival during a partition, or
   * refused a snapshot while it still believed an older active alive) drops the active's link to it
   * after a peer timeout's worth of mismatch: the active redials and sends a snapshot. At most once
   * per peer timeout, and never while a snapshot is arriving.
   */
  #resyncFromActive(): void {
    const active = this.membership.liveActive();
    const now = this.#node.clock.now();
    if (active === undefined || this.#replica.source === active.address) {
      this.#replicaMismatchSince = undefined;
      return;
    }
    this.#replicaMismatchSince ??= now;
    if (now - this.#replicaMismatchSince < this.#options.timing.peerTimeoutMs) return;
    const session = this.#sessions.get(active.address);
    if (session === undefined || session.receivingSnapshot) return;
    this.#replicaMismatchSince = now;
    session.close();
  }

  #reportLiveness(): void {
    for (const peer of this.membership.livenessChanges())
      this.#events.peerLiveness(peer.address, this.membership.isLive(peer), peer.role);
  }

  #follow(active: string | undefined): void {
    if (this.#node.activeAddress === active) return;
    this.#node.activeAddress = active;
    this.#events.following(active);
  }

  #snapshotNewStandbys(): void {
    for (const [index, link] of this.#links) {
      const peer = this.membership.peers[index]!;
      if (!link.connected || peer.role !== "standby" || !this.membership.isLive(peer)) continue;
      if (!this.#replicator.isStreaming(link))
        this.#replicator.sendSnapshot(link, this.#node.engine, this.#node.epoch);
    }
  }

  #isSyncedStandby(peer: PeerState): boolean {
    const link = this.#links.get(peer.index);
    return (
      peer.role === "standby" &&
      this.membership.isLive(peer) &&
      link !== undefined &&
      this.#replicator.isSynced(link)
    );
  }
}
