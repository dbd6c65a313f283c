import type { ConnectionOptions } from "node:tls";
import { encodePeer, type NodeRole, type PeerFrame, tokenEpoch } from "@lock/protocol";
import type { LockNode } from "../node.js";
import { type ClusterTiming, type Decision, Membership, type PeerState } from "./membership.js";
import { PeerLink } from "./peer-link.js";
import type { Replicator } from "./replicator.js";

/** The server-side operations a role change needs. */
export interface ClusterServerHooks {
  /** Answers every queued acquire with `M` to `address` and drops it. */
  redirectPending(address: string): void;
  /** Stops (and resumes) reading client requests: a handoff must not grant while it runs. */
  pauseClients(): void;
  resumeClients(): void;
}

/** An incoming connection from a peer, as the cluster sees it. */
export interface PeerSession {
  /** The peer's advertised address, once it sent `!J`. */
  peer: string | undefined;
  /** Last replication sequence applied from this session and not yet acknowledged. */
  pendingAck: number | undefined;
  sendRaw(line: string): void;
}

export interface ClusterOptions {
  readonly peers: readonly string[];
  readonly advertise: string;
  readonly timing: ClusterTiming;
  readonly authToken: string | undefined;
  readonly tls: ConnectionOptions | undefined;
  readonly handoffTimeoutMs: number;
}

export interface ClusterEvents {
  roleChanged(role: NodeRole, reason: string, epoch: bigint): void;
  /** A standby learned (or lost) the active it redirects clients to. */
  following(active: string | undefined): void;
  /** A peer refused this node's link (wrong auth token, not a cluster node…). */
  peerRefused(address: string, reply: string): void;
}

/**
 * One node's part in the active/standby cluster: heartbeats to every peer, the decisions of
 * `Membership` carried out (promote, demote, raise the epoch, hand off), the replication stream
 * while active, and the replica applied while standby. docs/consistency.md has the timelines.
 */
export class Cluster {
  readonly membership: Membership;
  readonly #node: LockNode;
  readonly #replicator: Replicator;
  readonly #hooks: ClusterServerHooks;
  readonly #events: ClusterEvents;
  readonly #options: ClusterOptions;
  readonly #links = new Map<number, PeerLink>();
  readonly #peerRoles = new Map<number, NodeRole | undefined>();
  readonly #refusalReportedAt = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #lastTickAt: number | undefined;
  #busy = false;
  #handingOff = false;
  /** The peer whose snapshot this standby holds. */
  #replicaOf: string | undefined;
  readonly counters = { promotions: 0, demotions: 0, handoffs: 0, epochRaises: 0 };

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
    this.membership.noteEpoch(node.epoch);
  }

  start(): void {
    for (const peer of this.membership.peers) {
      if (peer.index === this.membership.self) continue;
      const link = new PeerLink({
        address: peer.address,
        authToken: this.#options.authToken,
        tls: this.#options.tls,
        retryMs: this.#options.timing.heartbeatMs,
        maxBufferedBytes: 64 * 1024 * 1024,
        hello: () =>
          encodePeer({
            peer: "J",
            node: this.membership.selfAddress,
            role: this.#node.role,
            epoch: this.#node.epoch,
          }),
        onConnect: (connected) => this.#replicator.disconnected(connected),
        onDisconnect: (gone) => this.#replicator.disconnected(gone),
        onFrame: (from, frame) => {
          if (frame.peer === "K") this.#replicator.acknowledged(from, frame.seq);
        },
        onRefused: (from, reply) => this.#peerRefused(from.address, reply),
      });
      this.#links.set(peer.index, link);
    }
    this.#timer = setInterval(() => this.#tick(), this.#options.timing.heartbeatMs);
  }

  /**
   * Graceful stop: if this node is the active and a synced standby is live, hand the role to the
   * highest-priority one first, so clients move over with no gap. Then close the peer links.
   */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#node.role === "active" && !this.#busy) {
      const successor = await this.#syncedSuccessor();
      if (successor) await this.#handoff(successor, "shutdown");
    }
    for (const link of this.#links.values()) link.close();
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
        epoch: (self ? this.#node.epoch : peer.epoch).toString(),
        live: this.membership.isLive(peer),
        linkConnected: self ? null : (link?.connected ?? false),
        replicationLag: link && this.#node.role === "active" ? (this.#replicator.lag(link) ?? null) : null,
      };
    });
  }

  /** A frame from a peer's incoming connection (its heartbeats; the active's stream). */
  onPeerFrame(session: PeerSession, frame: PeerFrame): void {
    switch (frame.peer) {
      case "J":
        session.peer = frame.node;
        this.#heard(frame.node, frame.role, frame.epoch, undefined);
        return;
      case "B":
        session.peer = frame.node;
        this.#heard(frame.node, frame.role, frame.epoch, frame.active);
        return;
      case "S":
        if (this.#node.role === "active" || session.peer === undefined) return;
        this.membership.noteEpoch(frame.epoch);
        // Queued acquires here cannot be served by this standby: send them to the active first.
        this.#hooks.redirectPending(session.peer);
        this.#node.engine.clear();
        this.#replicaOf = session.peer;
        this.#follow(session.peer);
        return;
      case "K":
        return;
    }
    if (session.peer === undefined || session.peer !== this.#replicaOf || this.#node.role === "active")
      return;
    const engine = this.#node.engine;
    switch (frame.peer) {
      case "h":
        engine.installHolder(frame.key, frame.token, frame.remainingMs, frame.id);
        return;
      case "s":
        session.pendingAck = frame.seq;
        return;
      case "G":
        engine.installHolder(frame.key, frame.token, frame.leaseMs, frame.id);
        break;
      case "F":
        engine.removeHolder(frame.key);
        break;
      case "X":
        engine.installHolder(frame.key, frame.token, frame.leaseMs, engine.holder(frame.key)?.id);
        break;
      case "P":
        this.membership.noteEpoch(frame.epoch);
        break;
      case "O": {
        this.membership.noteEpoch(frame.epoch);
        // The sender stops serving as it sends this; its earlier heartbeats said "active".
        const from = this.membership.peerByAddress(session.peer);
        if (from) {
          from.role = "standby";
          // It follows us from here, with the snapshot the promotion sends: its next heartbeat
          // ("standby") is no step down from active that would need another one.
          this.#peerRoles.set(from.index, "standby");
        }
        this.#promote("handoff");
        // Acknowledge at once: the old active redirects its clients only after this.
        session.sendRaw(encodePeer({ peer: "K", seq: frame.seq }));
        return;
      }
    }
    session.pendingAck = frame.seq;
  }

  /** After a batch of peer frames from `session`: acknowledge what was applied. */
  flushAcks(session: PeerSession): void {
    if (session.pendingAck === undefined) return;
    session.sendRaw(encodePeer({ peer: "K", seq: session.pendingAck }));
    session.pendingAck = undefined;
  }

  #heard(address: string, role: NodeRole, epoch: bigint, active: string | undefined): void {
    const peer = this.membership.heard(address, role, epoch, active);
    if (!peer) return;
    const previous = this.#peerRoles.get(peer.index);
    this.#peerRoles.set(peer.index, role);
    // A peer that was active and is now a standby holds someone else's state: it needs our snapshot.
    const link = this.#links.get(peer.index);
    if (previous === "active" && role === "standby" && link) this.#replicator.disconnected(link);
  }

  #tick(): void {
    const now = this.#node.clock.now();
    // Ticks run every heartbeat: a gap past the peer timeout means this process was not running.
    if (this.#lastTickAt !== undefined && now - this.#lastTickAt > this.#options.timing.peerTimeoutMs)
      this.membership.resumedAfterStall();
    this.#lastTickAt = now;
    const heartbeat = encodePeer({
      peer: "B",
      node: this.membership.selfAddress,
      // While handing off this node no longer serves: the successor must not see a rival active.
      role: this.#handingOff ? "standby" : this.#node.role,
      epoch: this.#node.epoch,
      ...(this.#node.activeAddress ? { active: this.#node.activeAddress } : {}),
    });
    for (const link of this.#links.values()) link.send(heartbeat);
    if (this.#node.role === "standby" && !this.#busy) this.#follow(this.membership.liveActive()?.address);
    if (this.#node.role === "active") this.#snapshotNewStandbys();
    this.#act(
      this.membership.decide({ role: this.#node.role, epoch: this.#node.epoch, busy: this.#busy }, (peer) =>
        this.#isSyncedStandby(peer),
      ),
    );
  }

  #act(decision: Decision): void {
    switch (decision.action) {
      case "promote":
        this.#promote("no live active or higher-priority node");
        return;
      case "demote":
        this.#demote(decision.to);
        return;
      case "raise-epoch": {
        const epoch = this.#node.takeEpoch(decision.above + 1n);
        this.membership.noteEpoch(epoch);
        this.#replicator.announceEpoch(epoch);
        this.counters.epochRaises += 1;
        this.#events.roleChanged("active", `raised epoch above a rival active's ${decision.above}`, epoch);
        return;
      }
      case "handoff":
        void this.#handoff(decision.to, "a higher-priority node is back and synced");
        return;
    }
  }

  /** Reports a refused link at most once a minute per peer: the link redials every heartbeat. */
  #peerRefused(address: string, reply: string): void {
    const now = this.#node.clock.now();
    const last = this.#refusalReportedAt.get(address);
    if (last !== undefined && now - last < 60_000) return;
    this.#refusalReportedAt.set(address, now);
    this.#events.peerRefused(address, reply);
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

  /** Becomes the active with an epoch above every epoch seen, so its tokens exceed all earlier ones. */
  #promote(reason: string): void {
    let floor = this.membership.maxEpochSeen;
    for (const epoch of [this.#node.epoch, tokenEpoch(this.#node.engine.maxHeldToken())]) {
      if (epoch > floor) floor = epoch;
    }
    const epoch = this.#node.takeEpoch(floor + 1n);
    this.membership.noteEpoch(epoch);
    this.#replicaOf = undefined;
    this.#replicator.stopAll();
    this.#replicator.enabled = true;
    this.#node.setRole("active", this.membership.selfAddress);
    this.counters.promotions += 1;
    this.#events.roleChanged("active", reason, epoch);
    this.#tick();
  }

  /** Steps down for a higher-priority active: its clients are redirected, its state dropped. */
  #demote(to: PeerState): void {
    this.#stepDownTo(to.address, { keepTable: false });
    this.counters.demotions += 1;
    this.#events.roleChanged("standby", `a higher-priority active is live (${to.address})`, this.#node.epoch);
  }

  /** Stops being the active: nothing more is replicated, queued acquires go to `address`. */
  #stepDownTo(address: string, { keepTable }: { keepTable: boolean }): void {
    this.#replicator.enabled = false;
    this.#replicator.stopAll();
    this.#node.setRole("standby", undefined);
    this.#follow(address);
    this.#hooks.redirectPending(address);
    if (!keepTable) this.#node.engine.clear();
  }

  /**
   * Hands the active role to `to`: stop reading clients, send the handoff after the whole stream,
   * wait for the successor to promote and acknowledge, then redirect queued acquires to it.
   */
  async #handoff(to: PeerState, reason: string): Promise<void> {
    const link = this.#links.get(to.index);
    if (!link) return;
    this.#busy = true;
    this.#handingOff = true;
    this.#hooks.pauseClients();
    // No lease may expire (and hand its key to a waiter) here: the successor already has the table.
    this.#node.setRole("standby", undefined);
    try {
      const acked = await this.#replicator.handoff(link, this.#node.epoch, this.#options.handoffTimeoutMs);
      if (!acked) {
        this.#node.setRole("active", this.membership.selfAddress);
        return;
      }
      // The successor may already have sent its snapshot (on another connection): keep that one.
      this.#stepDownTo(to.address, { keepTable: this.#replicaOf === to.address });
      this.#peerRoles.set(to.index, "active");
      to.role = "active";
      this.counters.handoffs += 1;
      this.#events.roleChanged("standby", `handed off to ${to.address}: ${reason}`, this.#node.epoch);
    } finally {
      this.#hooks.resumeClients();
      this.#handingOff = false;
      this.#busy = false;
    }
  }
}
