import { TimerQueue } from "@lock/deadline-heap";
import { monotonicClock } from "../engine/clock.js";
import { LockNode, type LockNodeOptions } from "../node.js";
import { Cluster } from "./cluster.js";
import type { ClusterEvents, ClusterOptions, ClusterServerHooks } from "./cluster-api.js";
import { Replicator } from "./replicator.js";

export interface ClusterNodeOptions {
  /** The node: its store, limits, clock and timers (the cluster's timers run on the same queue). */
  readonly node: Omit<LockNodeOptions, "journal" | "startAs" | "hooks">;
  /** The cluster: peers, timing, peer key, how links are opened. */
  readonly cluster: Omit<ClusterOptions, "advertise" | "maxSnapshotHolders">;
  /** What role changes need of the server's connections. */
  readonly hooks: ClusterServerHooks;
  readonly events: ClusterEvents;
}

/** A cluster node: the LockNode and the Cluster around it (its Replicator journals the node's table). */
export interface ClusterNode {
  readonly node: LockNode;
  readonly cluster: Cluster;
}

/**
 * Builds one cluster node, the same way for lockd (net/server.ts, over sockets) and the simulator
 * (sim/sim-node.ts, over its network): a standby LockNode whose journal is the Replicator, and the
 * Cluster that takes its role decisions, with the node's hooks (stall check, serving, epoch renewal,
 * the followed active's epoch) passed in at construction. Nothing starts: call `cluster.start()`.
 */
export function createClusterNode(options: ClusterNodeOptions): ClusterNode {
  const clock = options.node.clock ?? monotonicClock;
  // One queue for every timer of the node; the replicator measures leases on the engine's clock.
  const timers = options.node.timers ?? new TimerQueue(clock);
  const replicator = new Replicator(timers);
  let cluster: Cluster | undefined;
  const node = new LockNode({
    ...options.node,
    clock,
    timers,
    journal: replicator,
    startAs: "standby",
    // Called only once the node runs (a standby neither serves nor renews an epoch while built).
    hooks: {
      beforeDeadlines: () => cluster?.guardGrants(),
      serving: () => options.events.serving(node.epoch),
      epochRenewed: (epoch) => replicator.announceEpoch(epoch),
      spareEpoch: () => cluster?.ownership?.takeSpare(),
      followedEpoch: () => cluster?.followedEpoch(),
      lockModesRefusal: () => cluster?.lockModesRefusal(),
    },
  });
  cluster = new Cluster(node, replicator, options.hooks, options.events, {
    ...options.cluster,
    advertise: node.advertise,
    maxSnapshotHolders: options.node.limits.maxKeys,
  });
  return { node, cluster };
}
