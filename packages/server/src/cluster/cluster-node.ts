import { TimerQueue } from "@lock/deadline-heap";
import { monotonicClock } from "../engine/clock.js";
import { LockNode, type LockNodeOptions } from "../node.js";
import { endWatchesOfMovedSlots } from "../slots/moved-watches.js";
import type { SlotGate } from "../slots/slot-gate.js";
import { rereadSlotMap } from "../slots/slot-map-reread.js";
import { type SlotMoveEvents, SlotMoves } from "../slots/slot-moves.js";
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
  /**
   * Several clusters over one key space (with `cluster.coordination`): the node's slot gate, which
   * SlotMoves keeps moves going through (docs/consistency.md, "Moving slots"). The gate's map is
   * followed by the caller (followSlotMap).
   */
  readonly slots?: {
    readonly gate: SlotGate;
    readonly events?: SlotMoveEvents;
    /** @internal The simulator's mutation (SlotMovesOptions.skipEpochRaise). */
    readonly skipEpochRaise?: boolean;
  };
}

/** A cluster node: the LockNode and the Cluster around it (its Replicator journals the node's table). */
export interface ClusterNode {
  readonly node: LockNode;
  readonly cluster: Cluster;
  /** With `slots` and a coordinator: the node's part in slot moves. */
  readonly slotMoves?: SlotMoves;
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
  const slots = options.cluster.coordination && options.slots;
  let slotMoves: SlotMoves | undefined;
  const { hooks, events } = slots
    ? slotMoveHooks(options, timers, () => slotMoves)
    : { hooks: options.hooks, events: options.events };
  const node = new LockNode({
    ...options.node,
    clock,
    timers,
    journal: replicator,
    startAs: "standby",
    // Called only once the node runs (a standby neither serves nor renews an epoch while built).
    hooks: {
      beforeDeadlines: () => cluster?.guardGrants(),
      serving: () => events.serving(node.epoch),
      epochRenewed: (epoch) => replicator.announceEpoch(epoch),
      spareEpoch: () => cluster?.ownership?.takeSpare(),
      followedEpoch: () => cluster?.followedEpoch(),
      lockModesRefusal: () => cluster?.lockModesRefusal(),
    },
  });
  cluster = new Cluster(node, replicator, hooks, events, {
    ...options.cluster,
    advertise: node.advertise,
    maxSnapshotHolders: options.node.limits.maxKeys,
  });
  if (slots) slotMoves = createSlotMoves(options, node, cluster, timers);
  return slotMoves ? { node, cluster, slotMoves } : { node, cluster };
}

/**
 * With a slot map: a new active re-reads the map before it serves (rereadSlotMap), and SlotMoves
 * looks again whenever the role or the serving state changes.
 */
function slotMoveHooks(
  options: ClusterNodeOptions,
  timers: TimerQueue,
  moves: () => SlotMoves | undefined,
): { hooks: ClusterServerHooks; events: ClusterEvents } {
  const { store } = options.cluster.coordination!;
  const slots = options.slots!;
  return {
    hooks: {
      ...options.hooks,
      // Gains read before the lease's epochs were asked for are covered by them: no extra raise.
      askingLease: () => {
        const ticket = slots.gate.epochTicket();
        return () => slots.gate.epochInUse(ticket);
      },
      leaseTaken: () => {
        options.hooks.leaseTaken?.();
        rereadSlotMap(store, slots.gate, timers, (error) =>
          slots.events?.storeFailed?.("re-read the slot map", error),
        );
      },
    },
    events: {
      ...options.events,
      roleChanged: (role, reason, epoch) => {
        options.events.roleChanged(role, reason, epoch);
        moves()?.step();
      },
      serving: (epoch) => {
        options.events.serving(epoch);
        moves()?.step();
      },
    },
  };
}

function createSlotMoves(
  options: ClusterNodeOptions,
  node: LockNode,
  cluster: Cluster,
  timers: TimerQueue,
): SlotMoves {
  const slots = options.slots!;
  endWatchesOfMovedSlots(slots.gate, node);
  return new SlotMoves({
    gate: slots.gate,
    store: options.cluster.coordination!.store,
    node,
    timers,
    host: {
      active: () => node.role === "active",
      mayCommit: () => node.role === "active" && node.serving && cluster.ownership?.valid() === true,
      raiseEpoch: () => cluster.raiseForGainedSlots(),
    },
    ...(slots.events ? { events: slots.events } : {}),
    ...(slots.skipEpochRaise ? { skipEpochRaise: true } : {}),
  });
}
