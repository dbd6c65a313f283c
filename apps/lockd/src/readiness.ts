import type { HoldReason, NodeRole } from "@lock/server";

/** A peer as `Cluster.peerStatus()` reports it (the fields readiness reads). */
export interface PeerView {
  readonly address: string;
  readonly self: boolean;
  readonly role: NodeRole | null;
  readonly live: boolean;
  readonly linkConnected: boolean | null;
}

export interface ReadinessInput {
  readonly role: NodeRole;
  /** Active and not holding grants (after a stall, or an epoch ahead of its clock). */
  readonly serving: boolean;
  /** Why an active holds grants, if it does. */
  readonly heldFor?: HoldReason | undefined;
  /** When a hold for the clock ends (wall time, ms since 1970). */
  readonly holdingUntilMs?: number | undefined;
  /** Undefined for a single node. */
  readonly peers: readonly PeerView[] | undefined;
  /** The active this node follows (itself when active). */
  readonly active: string | undefined;
  /** The active whose snapshot this standby's table holds (`Cluster.replicaSource`). */
  readonly replicaSource: string | undefined;
}

/** `GET /readyz`'s body. */
export interface Readiness {
  readonly ready: boolean;
  readonly role: NodeRole;
  readonly reason: string;
}

/**
 * Ready means "this node does its job in the cluster right now": an active that serves, or a
 * standby that holds the active's table and would keep every lock if the active died.
 *
 * A standby is in sync when it follows a live active, its link to the active is up (our heartbeats
 * on it keep us live to the active), and its table holds that active's snapshot, to which the
 * active's stream is applied from then on.
 */
export function readiness(input: ReadinessInput): Readiness {
  const { role } = input;
  if (role === "active") {
    return input.serving
      ? { ready: true, role, reason: "active and serving" }
      : { ready: false, role, reason: holdReason(input) };
  }
  if (input.peers === undefined) return { ready: false, role, reason: "not serving" };
  const active = input.active;
  if (active === undefined) return { ready: false, role, reason: "standby: no live active to follow" };
  const peer = input.peers.find((candidate) => candidate.address === active && !candidate.self);
  if (peer === undefined || !peer.live || peer.role !== "active")
    return { ready: false, role, reason: `standby: the active ${active} is not live` };
  if (peer.linkConnected !== true)
    return { ready: false, role, reason: `standby: no link to the active ${active}` };
  if (input.replicaSource !== active)
    return { ready: false, role, reason: `standby: syncing with the active ${active}` };
  return { ready: true, role, reason: `standby in sync with the active ${active}` };
}

function holdReason({ heldFor, holdingUntilMs }: ReadinessInput): string {
  if (heldFor === "stall")
    return "active but holding grants: confirming it is still the active after a stall";
  if (heldFor === "lease")
    return "active but holding grants: its ownership lease is not confirmed by the coordinator";
  if (heldFor === "clock" && holdingUntilMs !== undefined)
    return `active but holding grants until ${new Date(holdingUntilMs).toISOString()}: its new epoch is ahead of its clock`;
  return "active but holding grants (after a stall or an epoch ahead of the clock)";
}
