import type { NodeRole } from "@lock/server";

/** One entry of the status page's "recent changes": this node's role, or a peer's liveness. */
export type ClusterChange =
  | {
      readonly at: number;
      readonly kind: "role";
      readonly node: string;
      readonly role: NodeRole;
      readonly reason: string;
      readonly epoch: string;
    }
  | {
      readonly at: number;
      readonly kind: "peer";
      readonly node: string;
      readonly live: boolean;
      readonly role: NodeRole | null;
    };

/** Kept changes: an operator looks back minutes, not days; the log has the rest. */
export const CLUSTER_LOG_SIZE = 50;

/**
 * What the cluster told this node, kept for the admin API (recent changes on the status page, and
 * whom a standby follows since when, for /readyz). Fed by lockd's `ClusterEvents` handlers: the
 * cluster itself keeps no history. Times are wall-clock ms (shown to people) and monotonic ms (for
 * durations).
 */
export class ClusterLog {
  readonly #changes: ClusterChange[] = [];
  readonly #self: () => string;
  readonly #wallNow: () => number;
  readonly #monotonicNow: () => number;
  #following: { readonly active: string; readonly since: number } | undefined;

  /** `self`: this node's advertised address (known once the server started). */
  constructor(self: () => string, wallNow = Date.now, monotonicNow = () => performance.now()) {
    this.#self = self;
    this.#wallNow = wallNow;
    this.#monotonicNow = monotonicNow;
  }

  roleChanged(role: NodeRole, reason: string, epoch: bigint): void {
    this.#push({
      at: this.#wallNow(),
      kind: "role",
      node: this.#self(),
      role,
      reason,
      epoch: epoch.toString(),
    });
  }

  peerLiveness(address: string, live: boolean, role: NodeRole | undefined): void {
    this.#push({ at: this.#wallNow(), kind: "peer", node: address, live, role: role ?? null });
    // The active we follow went silent and came back: its stream may have restarted with a new
    // snapshot, so the standby counts as syncing again from now.
    if (live && this.#following?.active === address)
      this.#following = { active: address, since: this.#monotonicNow() };
  }

  following(active: string | undefined): void {
    this.#following = active === undefined ? undefined : { active, since: this.#monotonicNow() };
  }

  /** How long this standby has followed `active` without a change, in ms; undefined if it does not. */
  followingFor(active: string): number | undefined {
    const following = this.#following;
    if (following === undefined || following.active !== active) return undefined;
    return this.#monotonicNow() - following.since;
  }

  /** Newest first. */
  recent(): ClusterChange[] {
    return [...this.#changes].reverse();
  }

  #push(change: ClusterChange): void {
    this.#changes.push(change);
    if (this.#changes.length > CLUSTER_LOG_SIZE) this.#changes.shift();
  }
}
