import { TimerQueue } from "@lock/deadline-heap";
import type { SlotMap } from "@lock/protocol";
import { canHoldBeside, type HoldRule } from "../../engine/lock-mode.js";
import { DEFAULT_MAX_CLOCK_SKEW_MS } from "../../epoch/epoch-plan.js";
import { type ClusterTiming, DEFAULT_CLUSTER_TIMING } from "../membership.js";
import { type Connection, Network } from "./network.js";
import { Rng } from "./rng.js";
import { Scheduler } from "./scheduler.js";
import { type NodeObserver, SimNode } from "./sim-node.js";
import { SIM_CLUSTER, SimStore } from "./sim-store.js";
import { SlotOperator } from "./slot-operator.js";
import { initialSlotMap } from "./slot-workload.js";

/**
 * Ways to break the token-epoch rules or their assumption on purpose: the checker must then find
 * failures. `same-node-id`: every node has id 0 (epochs are no longer disjoint). `clock-behind`:
 * the last node's wall clock is 30 s behind, far past the configured skew bound.
 * `peer-token-mismatch`: the last node holds another peer token, so the real peer handshake keeps
 * it out of the cluster (a simulator that skipped the handshake would let it in unnoticed).
 * `writer-beside-reader`: the engine grants an exclusive request beside shared holders.
 * `bundle-key-by-key`: the engine takes a bundle's keys one by one, each under its own token.
 * `lease-overrun` (coordinated runs): nodes trust their ownership lease for three lease lengths
 * past its end, so they grant without a valid lease. `skip-epoch-raise` (several clusters): a
 * cluster serves slots moved to it with the epoch it has, no fresh one from the store.
 */
export type Mutation =
  | "none"
  | "lease-overrun"
  | "skip-epoch-raise"
  | "same-node-id"
  | "clock-behind"
  | "peer-token-mismatch"
  | "writer-beside-reader"
  | "bundle-key-by-key";

/** The engine's hold rule with a bug on purpose: an exclusive request is granted beside readers. */
const WRITER_BESIDE_READER: HoldRule = (mode, holding, holders, maxShared) =>
  mode.kind === "exclusive"
    ? holding === "none" || holding === "shared"
    : canHoldBeside(mode, holding, holders, maxShared);

export interface WorldOptions {
  readonly seed: number;
  readonly nodes: number;
  readonly mutation?: Mutation;
  readonly timing?: ClusterTiming;
  readonly observer?: Partial<NodeObserver>;
  /** Coordinated mode: a store that decides who is active (docs/consistency.md, "With a coordinator"). */
  readonly coordinated?: boolean;
  /**
   * Several clusters of `nodes` nodes each over one key space (coordinated, on one store): named
   * `a`, `b`, …, their nodes `a0:7420`…, each given an equal share of the slots in the store's map.
   */
  readonly clusters?: number;
  /** Time a snapshot's load takes per slice (`LOAD_PAUSES_MS`); the seed picks one unless given. */
  readonly loadPauseMs?: number;
}

/** The simulated nodes' ownership lease and margin (lockd's defaults). */
export const SIM_LEASE_MS = 2_000;
const SIM_MARGIN_MS = 200;

/**
 * How long each slice of a snapshot's load takes (8 holders, keys cleared or changes applied): a
 * seed picks one. The longest make a load of the simulator's few holders last over a peer timeout,
 * as a load of millions does in lockd.
 */
const LOAD_PAUSES_MS = [1, 10, 50, 150, 300];

/** True time at simulated time 0: some day in 2026 (tokens' rounds count from 2026-01-01). */
const WALL_ORIGIN = Date.UTC(2026, 5, 1);

const IGNORE: NodeObserver = {
  issued() {},
  queued() {},
  dequeued() {},
  refusedRelease() {},
  roleChanged() {},
  violation() {},
};

/** One cluster of the world: its name in the store and its nodes, in peers-list order. */
export interface SimCluster {
  readonly name: string;
  readonly nodes: readonly SimNode[];
}

/**
 * A simulated cluster: N nodes named `n0:7420`… (the peers list in that order) on one manual
 * clock and one simulated network, each with a wall clock off by a seeded skew within the
 * configured bound. `runUntil` runs events one at a time; the nodes start when told. With
 * `clusters`, several such clusters over one store and one key space.
 */
export class SimWorld {
  readonly scheduler = new Scheduler();
  readonly rng: Rng;
  readonly network: Network;
  /** Every node's address, cluster after cluster. */
  readonly names: readonly string[];
  readonly nodes: readonly SimNode[];
  readonly clusters: readonly SimCluster[];
  /** Coordinated mode's store, undefined otherwise. */
  readonly store: SimStore | undefined;
  /** Several clusters: the store's first slot map, and the operator who moves slots between them. */
  readonly initialMap: SlotMap | undefined;
  readonly operator: SlotOperator | undefined;
  events = 0;
  /** The timer queues of the simulated applications' clients, run on the world's clock. */
  readonly #appTimers: TimerQueue[] = [];
  /** An event ran application code: its promise continuations run before the next event. */
  #appRan = false;

  constructor(options: WorldOptions) {
    const mutation = options.mutation ?? "none";
    const several = (options.clusters ?? 1) > 1;
    const clusterNames = several
      ? [...Array(options.clusters).keys()].map((i) => String.fromCharCode(97 + i))
      : [SIM_CLUSTER];
    const peersOf = (cluster: string) =>
      [...Array(options.nodes).keys()].map((i) => `${several ? cluster : "n"}${i}:7420`);
    this.rng = new Rng(options.seed);
    this.network = new Network(this.scheduler, this.rng.fork());
    this.names = clusterNames.flatMap(peersOf);
    const observer = { ...IGNORE, ...options.observer };
    const skews = this.rng.fork();
    // Forked after the others, so an uncoordinated seed runs as it did before coordinated mode.
    this.store =
      options.coordinated || several
        ? new SimStore(this.scheduler, this.rng.fork(), () => this.appRuns())
        : undefined;
    // A stream of its own, so that every other choice of a seed is what it was before loads took time.
    const loadPauseMs = options.loadPauseMs ?? new Rng(options.seed ^ 0x10ad5eed).pick(LOAD_PAUSES_MS);
    const coordination = (cluster: string) =>
      this.store && {
        store: this.store,
        cluster,
        leaseMs: SIM_LEASE_MS,
        marginMs: mutation === "lease-overrun" ? -3 * SIM_LEASE_MS : SIM_MARGIN_MS,
        slots: several ? { skipEpochRaise: mutation === "skip-epoch-raise" } : undefined,
      };
    this.clusters = clusterNames.map((cluster) => {
      const peers = peersOf(cluster);
      const nodes = peers.map((_, index) => {
        const maxSkew = DEFAULT_MAX_CLOCK_SKEW_MS;
        const last = index === options.nodes - 1;
        const node = new SimNode(
          {
            index,
            peers,
            timing: options.timing ?? DEFAULT_CLUSTER_TIMING,
            skewMs: mutation === "clock-behind" && last ? -30_000 : (skews.float() * 2 - 1) * maxSkew * 0.9,
            maxClockSkewMs: maxSkew,
            nodeId: mutation === "same-node-id" ? 0 : index,
            holdRule: mutation === "writer-beside-reader" ? WRITER_BESIDE_READER : undefined,
            bundleKeyByKey: mutation === "bundle-key-by-key",
            peerToken: mutation === "peer-token-mismatch" && last ? "another-cluster" : undefined,
            wallOrigin: WALL_ORIGIN,
            loadPauseMs,
            coordination: coordination(cluster),
          },
          this.scheduler,
          this.network,
          observer,
        );
        this.network.addHost(node);
        return node;
      });
      return { name: cluster, nodes };
    });
    this.nodes = this.clusters.flatMap((cluster) => cluster.nodes);
    this.initialMap = several ? initialSlotMap(this.clusters) : undefined;
    this.operator =
      this.initialMap && this.store
        ? new SlotOperator(this.store, this.scheduler, this.initialMap, () => this.appRuns())
        : undefined;
  }

  get now(): number {
    return this.scheduler.now;
  }

  node(index: number): SimNode {
    return this.nodes[index]!;
  }

  get servingCount(): number {
    return this.nodes.filter((node) => node.serving).length;
  }

  /** How many nodes of `cluster` serve now (its node's `clusterName`). */
  servingIn(cluster: string): number {
    return this.nodes.filter((node) => node.serving && node.clusterName === cluster).length;
  }

  /**
   * A TimerQueue on the world's clock for one application's client: the world runs it like a
   * node's timers, so every timer of the client is an event of the world.
   */
  appTimers(): TimerQueue {
    const timers = new TimerQueue(this.scheduler.clock, { host: "manual" });
    this.#appTimers.push(timers);
    return timers;
  }

  /** Application code runs in this event (a socket event, a timer, a step of its workload). */
  appRuns(): void {
    this.#appRan = true;
  }

  /** Cuts both directions between every node of `side` and every other node. */
  partition(side: readonly number[], cut = true): void {
    const inside = new Set(side);
    for (let a = 0; a < this.names.length; a++)
      for (let b = 0; b < this.names.length; b++) {
        if (inside.has(a) === inside.has(b)) continue;
        if (cut) this.network.cut(this.names[a]!, this.names[b]!);
        else this.network.uncut(this.names[a]!, this.names[b]!);
      }
  }

  /**
   * Runs events in time order until the clock reaches `untilMs` or `done()` holds after an event
   * (checked after every one); true if `done()` held. `afterEach` runs after every event.
   *
   * The applications use @lock/client, whose API is promises: after an event that ran their code,
   * every continuation it made runnable runs before the next event (a macrotask turn lets Node run
   * all pending `nextTick`s and microtasks, however long the chain). Nothing else runs in that
   * turn: every timer and socket of theirs is the world's, so the order stays the seed's.
   */
  async runUntil(untilMs: number, done?: () => boolean, afterEach?: () => void): Promise<boolean> {
    for (;;) {
      if (done?.()) return true;
      const eventAt = this.scheduler.nextAt ?? Number.POSITIVE_INFINITY;
      const timers = this.#firstTimers();
      const nextAt = Math.min(eventAt, timers?.at ?? Number.POSITIVE_INFINITY);
      if (nextAt > untilMs) {
        this.scheduler.clock.set(Math.max(untilMs, this.scheduler.now));
        return done?.() ?? false;
      }
      // A scheduler event at the same time as a timer goes first.
      if (timers && nextAt < eventAt) {
        this.scheduler.clock.set(Math.max(nextAt, this.scheduler.now));
        if (timers.of instanceof TimerQueue) {
          this.#appRan = true;
          timers.of.runDue();
        } else timers.of.runTimers();
      } else this.scheduler.runNext(nextAt);
      this.events += 1;
      if (this.#appRan) {
        this.#appRan = false;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      afterEach?.();
    }
  }

  /** Whose timers are due first: a running node's or an application's (ties: nodes, in order). */
  #firstTimers(): { at: number; of: SimNode | TimerQueue } | undefined {
    let at = Number.POSITIVE_INFINITY;
    let of: SimNode | TimerQueue | undefined;
    for (const node of this.nodes) {
      const due = node.nextTimerAt;
      if (due !== undefined && due < at) [at, of] = [due, node];
    }
    for (const timers of this.#appTimers) {
      const due = timers.nextDeadline;
      if (due !== undefined && due < at) [at, of] = [due, timers];
    }
    return of === undefined ? undefined : { at, of };
  }

  runFor(ms: number, done?: () => boolean): Promise<boolean> {
    return this.runUntil(this.now + ms, done);
  }
}

/** A client connection for tests: lines out, replies collected in order. */
export class ScriptedConnection {
  readonly replies: string[] = [];
  connection: Connection | undefined;
  closed = false;

  constructor(
    readonly world: SimWorld,
    readonly client: string,
    readonly node: string,
  ) {}

  /** Sends one request line and runs the world until its reply arrives (or `limitMs` passes). */
  async request(line: string, limitMs = 5_000): Promise<string | undefined> {
    const connection = this.connection;
    if (!connection) throw new Error("not connected");
    const before = this.replies.length;
    this.world.network.send(connection, 0, `${line}\n`);
    await this.world.runFor(limitMs, () => this.replies.length > before);
    return this.replies[before];
  }
}

/** Opens a scripted client connection from host `client` to `node` (running the world). */
export async function connectScripted(
  world: SimWorld,
  client: string,
  node: string,
): Promise<ScriptedConnection> {
  const scripted = new ScriptedConnection(world, client, node);
  if (!world.network.hasHost(client)) {
    world.network.addHost({
      name: client,
      up: true,
      stalled: false,
      generation: 0,
      defer: (work) => work(),
      accept: () => undefined,
    });
  }
  let failed = false;
  world.network.dial(
    client,
    node,
    {
      onLine: (text) => {
        for (const line of text.split("\n")) if (line !== "") scripted.replies.push(line);
      },
      onClose: () => {
        scripted.closed = true;
      },
    },
    (opened) => {
      scripted.connection = opened;
    },
    () => {
      failed = true;
    },
  );
  await world.runFor(1_000, () => scripted.connection !== undefined || failed);
  if (!scripted.connection) throw new Error(`${client} could not connect to ${node}`);
  return scripted;
}
