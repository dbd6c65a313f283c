import { TimerQueue } from "@lock/deadline-heap";
import { encodeReply, isDecodeError, isPeerFrame, parseRequestLine, type Reply } from "@lock/protocol";
import type { CoordinationStore } from "../../coordination/store.js";
import type { HoldRule } from "../../engine/lock-mode.js";
import { MemoryEpochStore } from "../../epoch/epoch-store.js";
import { DEFAULT_SERVER_LIMITS } from "../../limits.js";
import type { LockNode } from "../../node.js";
import { LockVerbs } from "../../session/lock-verbs.js";
import { ClusterActives } from "../../slots/cluster-actives.js";
import { SlotGate } from "../../slots/slot-gate.js";
import { followSlotMap, type SlotMapEvents } from "../../slots/slot-map-follower.js";
import type { SlotMoveEvents, SlotMoves } from "../../slots/slot-moves.js";
import type { Cluster } from "../cluster.js";
import type { ClusterEvents, ClusterOptions, ClusterServerHooks } from "../cluster-api.js";
import { type ClusterNodeOptions, createClusterNode } from "../cluster-node.js";
import type { ClusterTiming } from "../membership.js";
import { PeerKey } from "../peer/peer-auth.js";
import { MemoryLink } from "./memory-link.js";
import type { Connection, ConnectionEnd, Host, Network } from "./network.js";
import { acceptPeer } from "./peer-connection.js";
import type { Scheduler } from "./scheduler.js";
import { SIM_CLUSTER, type SimStore } from "./sim-store.js";

/** What the simulator learns from a node as it runs: its replies as they leave, role changes. */
export interface NodeObserver {
  /** A bundle's grant (after `issued` for its first key): all its keys. */
  bundleIssued?(node: SimNode, keys: readonly string[], token: bigint): void;
  /** A grant (or a replayed grant) left this node for a client at `now`. */
  issued(node: SimNode, key: string, token: bigint, id: string | undefined, leaseMs: number): void;
  /** An acquire was queued on this node (no immediate answer). */
  queued(node: SimNode, key: string, id: string): void;
  /** A queued acquire left the queue: granted, or answered otherwise (T, M, E, connection gone). */
  dequeued(node: SimNode, key: string, id: string, granted: boolean): void;
  /** The node answered a release of `token` with `R key 0`. */
  refusedRelease(node: SimNode, key: string, token: bigint): void;
  roleChanged(node: SimNode, role: string, reason: string): void;
  /** A standby now redirects clients to `active` (a snapshot from it, or heartbeats naming it). */
  following?(node: SimNode, active: string | undefined): void;
  /** A step of a slot move on this node (queued acquires withdrawn, a commit, gained slots served): for the log. */
  slotEvent?(node: SimNode, what: string): void;
  /** Something that must never happen between honest nodes (a peer link broke the protocol). */
  violation(node: SimNode, what: string): void;
}

export interface SimNodeConfig {
  readonly index: number;
  readonly peers: readonly string[];
  readonly timing: ClusterTiming;
  /** This machine's wall clock minus true time. */
  readonly skewMs: number;
  /** The `--max-clock-skew` the node is configured with. */
  readonly maxClockSkewMs: number;
  /** The node id in its epochs: its index unless a mutation makes ids collide. */
  readonly nodeId: number;
  /** True time (wall-clock ms) at simulated time 0. */
  readonly wallOrigin: number;
  /** The node's peer token: none (`--insecure`) unless a mutation gives one node another. */
  readonly peerToken: string | undefined;
  /** A negative control: the engine's rule of which holds share a key, with a bug in it. */
  readonly holdRule?: HoldRule | undefined;
  /** A negative control: the engine takes a bundle key by key, a grant each. */
  readonly bundleKeyByKey?: boolean | undefined;
  /** Simulated time between two slices of a snapshot's load (8 holders installed, keys cleared or changes applied). */
  readonly loadPauseMs: number;
  /**
   * Coordinated mode: the deployment's store, the node's cluster name there and its lease settings;
   * with `slots`, the node follows the store's slot map and takes part in moves (`skipEpochRaise`:
   * the mutation that serves gained slots without a fresh epoch).
   */
  readonly coordination?:
    | {
        readonly store: SimStore;
        readonly cluster: string;
        readonly leaseMs: number;
        readonly marginMs: number;
        readonly slots?: { readonly skipEpochRaise: boolean } | undefined;
      }
    | undefined;
}

/** A client connection on a node: its lock verbs behind the simulated socket. */
class ClientSession implements ConnectionEnd {
  readonly verbs: LockVerbs;
  #paused = false;
  readonly #waiting: string[] = [];
  /** Leases asked by this session's acquires, by id: a grant's lease, for the checker. */
  readonly #leases = new Map<string, number>();
  /** Acquires queued on this session, by id, with their keys (one, or a bundle's). */
  readonly #queued = new Map<string, readonly string[]>();
  /** Bundles (`B`) asked on this session, by id, with their keys: checked when granted. */
  readonly #bundles = new Map<string, readonly string[]>();
  /** Replies sent while a request runs: none for an acquire means it was queued. */
  #repliesInRun = 0;
  #releasing: { key: string; token: bigint } | undefined;

  constructor(
    readonly node: SimNode,
    readonly connection: Connection,
  ) {
    this.verbs = new LockVerbs(
      {
        node: node.lock!,
        limits: DEFAULT_SERVER_LIMITS,
        version: "sim",
        connectionCount: () => 0,
        ...(node.gate ? { slots: node.gate } : {}),
      },
      (reply) => this.#reply(reply),
    );
  }

  #reply(reply: Reply): void {
    this.#repliesInRun += 1;
    const { node } = this;
    const observer = node.observer;
    const grant = reply.kind === "A" || reply.kind === "Q" || reply.kind === "B";
    if (grant || reply.kind === "Y" || reply.kind === "W") {
      observer.issued(node, reply.key, reply.token, reply.id, this.#leases.get(reply.id ?? "") ?? 0);
    }
    if (reply.kind === "B") this.#checkBundle(reply.id, reply.token);
    if ((grant || reply.kind === "T" || reply.kind === "M" || reply.kind === "E") && reply.id) {
      const keys = this.#queued.get(reply.id);
      this.#queued.delete(reply.id);
      for (const key of keys ?? []) observer.dequeued(node, key, reply.id, grant);
      this.#leases.delete(reply.id);
      this.#bundles.delete(reply.id);
    }
    if (reply.kind === "R" && !reply.released && this.#releasing)
      observer.refusedRelease(node, this.#releasing.key, this.#releasing.token);
    node.network.send(this.connection, 1, encodeReply(reply));
  }

  onLine(text: string): void {
    if (this.#paused) {
      this.#waiting.push(text);
      return;
    }
    this.node.cluster?.guardGrants();
    for (const line of text.split("\n")) {
      if (line === "") continue;
      const request = parseRequestLine(line);
      if (isDecodeError(request) || isPeerFrame(request) || request.op === "H")
        throw new Error(`the simulated client sent ${JSON.stringify(line)}`);
      this.#repliesInRun = 0;
      this.#releasing = request.op === "R" ? { key: request.key, token: request.token } : undefined;
      const waits = request.op === "A" || request.op === "Q" || request.op === "B";
      if (waits && request.id) this.#leases.set(request.id, request.leaseMs);
      if (request.op === "B") this.#bundles.set(request.id, request.keys);
      this.verbs.run(request);
      this.#releasing = undefined;
      if (waits && request.id && this.#repliesInRun === 0) {
        const keys = request.op === "B" ? request.keys : [request.key];
        this.#queued.set(request.id, keys);
        for (const key of keys) this.node.observer.queued(this.node, key, request.id);
      }
    }
    this.node.lock?.afterRequests();
  }

  onClose(): void {
    this.node.sessions.delete(this);
    // Its queued acquires leave the queues before the waiters behind them may be granted.
    this.withdrawn();
    this.verbs.close();
  }

  /** Its queued acquires are gone with it (closed, or the node was killed). */
  withdrawn(): void {
    for (const [id, keys] of this.#queued)
      for (const key of keys) this.node.observer.dequeued(this.node, key, id, false);
    this.#queued.clear();
    this.#bundles.clear();
  }

  /** A bundle's grant holds every one of its keys, under its one token (all or nothing). */
  #checkBundle(id: string, token: bigint): void {
    const keys = this.#bundles.get(id) ?? [];
    this.node.observer.bundleIssued?.(this.node, keys, token);
    for (const key of keys) {
      const holders = this.node.lock!.holdersOf(key).map((holder) => holder.token);
      if (holders.length !== 1 || holders[0] !== token)
        this.node.observer.violation(
          this.node,
          `bundle ${id} granted with token ${token}, but ${key} is held by [${holders.join(", ")}]`,
        );
    }
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    for (const text of this.#waiting.splice(0)) this.onLine(text);
  }
}

/**
 * One lockd node in the simulator: the real LockNode, Replicator and Cluster on a manual
 * TimerQueue, peer links over the simulated network (MemoryLink out, PeerSession in), client
 * sessions running the real LockVerbs. Its epoch store survives a kill (the epoch file is fsynced
 * before it is used, so no write is lost).
 */
export class SimNode implements Host {
  readonly name: string;
  readonly store = new MemoryEpochStore();
  readonly sessions = new Set<ClientSession>();
  up = false;
  stalled = false;
  lock: LockNode | undefined;
  cluster: Cluster | undefined;
  timers: TimerQueue | undefined;
  /** With a slot map: this process's gate (which keys its cluster serves) and its part in moves. */
  gate: SlotGate | undefined;
  slotMoves: SlotMoves | undefined;
  #stopSlotMap: (() => void) | undefined;
  /** Incarnations: bumped by every start, so a history tells runs of one node apart. */
  incarnation = 0;

  get generation(): number {
    return this.incarnation;
  }
  /**
   * The highest epoch any frame this node has processed carried (heartbeats' epoch and highest,
   * snapshots', `!P`, `!O`), across restarts: the checker's own account of what it was told,
   * independent of what the node made of it.
   */
  toldEpoch = 0n;
  /** Peers this process has processed a frame from since it started (a lone restart has not all). */
  readonly heardSinceStart = new Set<string>();
  /** This process has held an active's snapshot (it then knows what that active knew). */
  syncedSinceStart = false;
  readonly #deferred: Array<() => void> = [];

  constructor(
    readonly config: SimNodeConfig,
    readonly scheduler: Scheduler,
    readonly network: Network,
    readonly observer: NodeObserver,
  ) {
    this.name = config.peers[config.index]!;
  }

  start(): void {
    const { config, scheduler } = this;
    this.incarnation += 1;
    this.heardSinceStart.clear();
    this.syncedSinceStart = false;
    const timers = new TimerQueue(scheduler.clock, { host: "manual" });
    // The handshake runs in full (with an empty key unless a mutation sets one), its nonces drawn
    // from a counter so that a seed replays exactly.
    let nonces = 0;
    const coordination = config.coordination;
    const key = new PeerKey(
      config.peerToken,
      () => (nonces++).toString(16).padStart(64, "0"),
      coordination?.cluster,
    );
    const store = coordination?.store.clientFor(this);
    const gate = coordination?.slots && store ? this.#slotGate(coordination.cluster, store) : undefined;
    const {
      node: lock,
      cluster,
      slotMoves,
    } = createClusterNode({
      node: {
        dataDir: undefined,
        epochStore: this.store,
        limits: DEFAULT_SERVER_LIMITS,
        advertise: this.name,
        clock: scheduler.clock,
        timers,
        nodeId: config.nodeId,
        maxClockSkewMs: config.maxClockSkewMs,
        wallNow: () => config.wallOrigin + scheduler.now + config.skewMs,
        ...(config.holdRule ? { holdRule: config.holdRule } : {}),
        ...(config.bundleKeyByKey ? { bundleKeyByKey: true } : {}),
      },
      cluster: {
        peers: config.peers,
        timing: config.timing,
        key,
        links: (address, linkEvents) =>
          new MemoryLink(this.network, this.name, address, linkEvents, {
            timers,
            retryMs: config.timing.heartbeatMs,
            key,
          }),
        handoffTimeoutMs: 2_000,
        // A slice every few simulated milliseconds: a load spans time, and frames, faults and
        // promotions come in the middle of it, as they do at millions of holders (lockd's pacing
        // takes no simulated time).
        loadPacing: { perTurn: 8, turnMs: Number.POSITIVE_INFINITY, pauseMs: config.loadPauseMs },
        ...(store ? { coordination: this.#coordination(store) } : {}),
      },
      ...(gate ? { slots: this.#slots(gate) } : {}),
      hooks: this.#hooks(),
      events: this.#events(),
    });
    this.lock = lock;
    this.cluster = cluster;
    this.timers = timers;
    this.gate = gate;
    this.slotMoves = slotMoves;
    this.up = true;
    this.stalled = false;
    cluster.start();
    // As lockd does once its server runs: follow the store's map (seeded by the world).
    if (gate && store) this.#stopSlotMap = followSlotMap(store, gate, undefined, this.#slotMapEvents());
  }

  /** What the cluster does with the store: its lease under this process's name, its epochs. */
  #coordination(store: CoordinationStore): NonNullable<ClusterOptions["coordination"]> {
    const coordination = this.config.coordination!;
    return {
      store,
      cluster: coordination.cluster,
      holder: coordination.store.holderName(this),
      leaseMs: coordination.leaseMs,
      marginMs: coordination.marginMs,
    };
  }

  /** Slot moves: the gate, their events (for the log), and the mutation if the world has it. */
  #slots(gate: SlotGate): NonNullable<ClusterNodeOptions["slots"]> {
    return {
      gate,
      events: this.#slotMoveEvents(),
      skipEpochRaise: this.config.coordination?.slots?.skipEpochRaise === true,
    };
  }

  /** What role changes need of the node's client sessions. */
  #hooks(): ClusterServerHooks {
    return {
      redirectPending: (address) => {
        for (const session of this.sessions) session.verbs.redirectPending(address);
      },
      pauseClients: () => {
        for (const session of this.sessions) session.pause();
      },
      resumeClients: () => {
        for (const session of this.sessions) session.resume();
      },
    };
  }

  /** lockd's gate with `--slot-map`: it waits for the store's map, and names other clusters' actives. */
  #slotGate(cluster: string, store: CoordinationStore): SlotGate {
    const actives = new ClusterActives(store, this.scheduler.clock);
    return new SlotGate(cluster, { awaitMap: true, activeOf: (other) => actives.activeOf(other) });
  }

  #slotMoveEvents(): SlotMoveEvents {
    const said = (what: string) => this.observer.slotEvent?.(this, what);
    return {
      withdrawn: (count) => said(`withdrew ${count} queued acquires of moving slots`),
      committed: (ranges, version) =>
        said(
          `committed map v${version}: ${ranges.map((r) => `slots ${r.from}-${r.to} to ${r.movingTo}`).join(", ")}`,
        ),
      gainsServed: () => said("serves the slots it gained"),
    };
  }

  /** The map in the store is always valid and never deleted in the simulator: anything else is a bug. */
  #slotMapEvents(): SlotMapEvents {
    return {
      mapChanged: () => {},
      mapRefused: (version, error) =>
        this.observer.violation(this, `refused slot map v${version}: ${error.message}`),
      mapDeleted: () => this.observer.violation(this, "the slot map was deleted"),
      seedFailed: () => {},
    };
  }

  /** What the cluster reports, as far as the simulator's checks care. */
  #events(): ClusterEvents {
    return {
      roleChanged: (role, reason) => this.observer.roleChanged(this, role, reason),
      following: (active) => this.observer.following?.(this, active),
      peerRefused: () => {},
      peerRejected: () => {},
      peerLinkDropped: (peer, reason) =>
        this.observer.violation(this, `link with ${peer} dropped: ${reason}`),
      epochRefused: () => {},
      stalled: () => {},
      serving: () => {},
      peerLiveness: () => {},
    };
  }

  /** kill -9: the process is gone; only the epoch store remains. */
  kill(): void {
    if (!this.up) return;
    this.up = false;
    this.stalled = false;
    this.#deferred.length = 0;
    this.timers?.stop();
    this.#stopSlotMap?.();
    this.#stopSlotMap = undefined;
    this.slotMoves?.close();
    this.network.resetHost(this.name);
    for (const session of this.sessions) session.withdrawn();
    this.sessions.clear();
    this.lock = undefined;
    this.cluster = undefined;
    this.timers = undefined;
    this.gate = undefined;
    this.slotMoves = undefined;
  }

  /**
   * SIGTERM: a graceful stop as lockd does it: the cluster hands off if it is the active, then
   * queued acquires get SHUTTING_DOWN and the process exits.
   */
  stop(): void {
    const cluster = this.cluster;
    if (!this.up || !cluster) return;
    // Stepped by the world's events (the successor's acknowledgement, timers): no promise to pump.
    cluster.stop(() => {
      if (this.cluster !== cluster) return;
      for (const session of this.sessions)
        session.verbs.failPending("SHUTTING_DOWN", "the server is shutting down");
      this.kill();
    });
  }

  /** SIGSTOP: nothing of this node runs; what reaches it waits. */
  pause(): void {
    if (this.up) this.stalled = true;
  }

  /** SIGCONT: what waited runs in arrival order, then its timers catch up. */
  resume(): void {
    if (!this.stalled) return;
    this.stalled = false;
    for (const work of this.#deferred.splice(0)) {
      if (!this.up) break;
      work();
    }
  }

  defer(work: () => void): void {
    if (!this.up) return;
    if (this.stalled) this.#deferred.push(work);
    else work();
  }

  /** When this node's next timer is due, if it runs. */
  get nextTimerAt(): number | undefined {
    return this.up && !this.stalled ? this.timers?.nextDeadline : undefined;
  }

  runTimers(): void {
    if (!this.up || this.stalled) return;
    this.timers?.runDue();
    // A snapshot's load ends in a timer: the node holds the whole snapshot from then on.
    if (this.cluster?.replicaSource !== undefined) this.syncedSinceStart = true;
  }

  /** Active, not held, and with a coordinator holding a lease valid by its own clock. */
  get serving(): boolean {
    const valid = this.cluster?.ownership?.valid() ?? true;
    return this.up && !this.stalled && this.lock?.serving === true && valid;
  }

  /** The cluster this node belongs to (its name in the store; one cluster is `sim`). */
  get clusterName(): string {
    return this.config.coordination?.cluster ?? SIM_CLUSTER;
  }

  /** This node's current run as the active (incarnation and promotion), for per-term checks. */
  get term(): string {
    return `${this.name}#${this.incarnation}.${this.cluster?.counters.promotions ?? 0}`;
  }

  /** The holder table: key → token, a shared holder or permit as `<key> <token> <mode> <slot>`. */
  table(): Map<string, bigint> {
    const table = new Map<string, bigint>();
    for (const { key, token, mode, slot } of this.lock?.holders() ?? [])
      table.set(
        mode === undefined || mode.kind === "exclusive" ? key : `${key} ${token} ${mode.kind} ${slot}`,
        token,
      );
    return table;
  }

  /** The holders of `key` on this node, with their mode and slot (the checker's view). */
  holdersOf(key: string): Array<{ mode: string; slot: number | undefined }> {
    return this.lock?.holdersOf(key) ?? [];
  }

  accept(from: string, connection: Connection): ConnectionEnd | undefined {
    const lock = this.lock;
    const cluster = this.cluster;
    if (!this.up || !lock || !cluster) return undefined;
    if (this.config.peers.includes(from)) return acceptPeer(this, from, connection, cluster);
    const session = new ClientSession(this, connection);
    this.sessions.add(session);
    return session;
  }
}
