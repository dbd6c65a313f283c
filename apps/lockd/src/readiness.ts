import type { NodeRole } from "@lock/server";

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
  /** Undefined for a single node. */
  readonly peers: readonly PeerView[] | undefined;
  /** The active this node follows (itself when active). */
  readonly active: string | undefined;
  /** How long this node has followed `active` without a change (ClusterLog.followingFor). */
  readonly followingForMs: number | undefined;
  /** How long a standby must have followed a live active before it counts as in sync. */
  readonly syncGraceMs: number;
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
 * A standby cannot see its own snapshot state through the cluster's public surface, so "in sync"
 * is judged from what it can see: it follows a live active, both peer links are up (the active's
 * heartbeats arrive on the link that carries its stream, and our heartbeats on ours make us live
 * to it), and that has held for `syncGraceMs` (lockd: one peer timeout) since it began to follow
 * that active or heard it again after a silence (ClusterLog). The active snapshots a live
 * standby at its next heartbeat, so that window covers it unless the snapshot is huge.
 */
export function readiness(input: ReadinessInput): Readiness {
  const { role } = input;
  if (role === "active") {
    return input.serving
      ? { ready: true, role, reason: "active and serving" }
      : {
          ready: false,
          role,
          reason: "active but holding grants (after a stall or an epoch ahead of the clock)",
        };
  }
  if (input.peers === undefined) return { ready: false, role, reason: "not serving" };
  const active = input.active;
  if (active === undefined) return { ready: false, role, reason: "standby: no live active to follow" };
  const peer = input.peers.find((candidate) => candidate.address === active && !candidate.self);
  if (peer === undefined || !peer.live || peer.role !== "active")
    return { ready: false, role, reason: `standby: the active ${active} is not live` };
  if (peer.linkConnected !== true)
    return { ready: false, role, reason: `standby: no link to the active ${active}` };
  const followedMs = input.followingForMs ?? 0;
  if (followedMs < input.syncGraceMs)
    return { ready: false, role, reason: `standby: syncing with the active ${active}` };
  return { ready: true, role, reason: `standby in sync with the active ${active}` };
}
