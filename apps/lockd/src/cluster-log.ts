import type { NodeRole } from "@lock/server";

/**
 * One entry of the status page's "recent changes": this node's role, a peer's liveness, or the
 * active this standby follows (how a standby learns that another node took over).
 */
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
    }
  | {
      readonly at: number;
      readonly kind: "follow";
      /** This node. */
      readonly node: string;
      /** The active it follows now; null: none (it knows no live active). */
      readonly active: string | null;
    };

/** Kept changes: an operator looks back minutes, not days; the log has the rest. */
export const CLUSTER_LOG_SIZE = 50;

/**
 * What the cluster told this node, kept for the admin API (recent changes on the status page). Fed
 * by lockd's `ClusterEvents` handlers: the cluster itself keeps no history. Times are wall-clock ms
 * (shown to people).
 */
export class ClusterLog {
  readonly #changes: ClusterChange[] = [];
  readonly #self: () => string;
  readonly #wallNow: () => number;

  /** `self`: this node's advertised address (known once the server started). */
  constructor(self: () => string, wallNow = Date.now) {
    this.#self = self;
    this.#wallNow = wallNow;
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
  }

  /** This standby follows `active` now (undefined: no active known). */
  following(active: string | undefined): void {
    this.#push({ at: this.#wallNow(), kind: "follow", node: this.#self(), active: active ?? null });
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
