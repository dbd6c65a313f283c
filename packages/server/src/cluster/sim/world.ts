import { DEFAULT_MAX_CLOCK_SKEW_MS } from "../../epoch/epoch-plan.js";
import { type ClusterTiming, DEFAULT_CLUSTER_TIMING } from "../membership.js";
import { type Connection, Network } from "./network.js";
import { Rng } from "./rng.js";
import { Scheduler } from "./scheduler.js";
import { type NodeObserver, SimNode } from "./sim-node.js";

/**
 * Ways to break the token-epoch rules or their assumption on purpose: the checker must then find
 * failures. `same-node-id`: every node has id 0 (epochs are no longer disjoint). `clock-behind`:
 * the last node's wall clock is 30 s behind, far past the configured skew bound.
 * `peer-token-mismatch`: the last node holds another peer token, so the real peer handshake keeps
 * it out of the cluster (a simulator that skipped the handshake would let it in unnoticed).
 */
export type Mutation = "none" | "same-node-id" | "clock-behind" | "peer-token-mismatch";

export interface WorldOptions {
  readonly seed: number;
  readonly nodes: number;
  readonly mutation?: Mutation;
  readonly timing?: ClusterTiming;
  readonly observer?: Partial<NodeObserver>;
}

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

/**
 * A simulated cluster: N nodes named `n0:7420`… (the peers list in that order) on one manual
 * clock and one simulated network, each with a wall clock off by a seeded skew within the
 * configured bound. `runUntil` runs events one at a time; the nodes start when told.
 */
export class SimWorld {
  readonly scheduler = new Scheduler();
  readonly rng: Rng;
  readonly network: Network;
  readonly names: readonly string[];
  readonly nodes: readonly SimNode[];
  events = 0;

  constructor(options: WorldOptions) {
    const mutation = options.mutation ?? "none";
    this.rng = new Rng(options.seed);
    this.network = new Network(this.scheduler, this.rng.fork());
    this.names = [...Array(options.nodes).keys()].map((i) => `n${i}:7420`);
    const observer = { ...IGNORE, ...options.observer };
    const skews = this.rng.fork();
    this.nodes = this.names.map((_, index) => {
      const maxSkew = DEFAULT_MAX_CLOCK_SKEW_MS;
      const node = new SimNode(
        {
          index,
          peers: this.names,
          timing: options.timing ?? DEFAULT_CLUSTER_TIMING,
          skewMs:
            mutation === "clock-behind" && index === options.nodes - 1
              ? -30_000
              : (skews.float() * 2 - 1) * maxSkew * 0.9,
          maxClockSkewMs: maxSkew,
          nodeId: mutation === "same-node-id" ? 0 : index,
          peerToken:
            mutation === "peer-token-mismatch" && index === options.nodes - 1 ? "another-cluster" : undefined,
          wallOrigin: WALL_ORIGIN,
        },
        this.scheduler,
        this.network,
        observer,
      );
      this.network.addHost(node);
      return node;
    });
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
   */
  async runUntil(untilMs: number, done?: () => boolean, afterEach?: () => void): Promise<boolean> {
    for (;;) {
      if (done?.()) return true;
      let nextNode: SimNode | undefined;
      let nextAt = this.scheduler.nextAt ?? Number.POSITIVE_INFINITY;
      for (const node of this.nodes) {
        const at = node.nextTimerAt;
        if (at !== undefined && at < nextAt) {
          nextAt = at;
          nextNode = node;
        }
      }
      if (nextAt > untilMs) {
        this.scheduler.clock.set(Math.max(untilMs, this.scheduler.now));
        return done?.() ?? false;
      }
      if (nextNode && nextAt === nextNode.nextTimerAt) {
        this.scheduler.clock.set(Math.max(nextAt, this.scheduler.now));
        nextNode.runTimers();
      } else this.scheduler.runNext(nextAt);
      this.events += 1;
      afterEach?.();
    }
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
