import type { NodeRole } from "@lock/protocol";
import type { CoordinationStore } from "../coordination/store.js";
import type { LinkFactory } from "./link.js";
import type { ClusterTiming } from "./membership.js";
import type { PeerKey } from "./peer/peer-auth.js";
import type { LoadPacing } from "./snapshot-load.js";

/** The server-side operations a role change needs. */
export interface ClusterServerHooks {
  /** Answers every queued acquire with `M` to `address` and drops it. */
  redirectPending(address: string | undefined): void;
  /** Stops (and resumes) reading client requests: a handoff must not grant while it runs. */
  pauseClients(): void;
  resumeClients(): void;
  /**
   * With a coordinator: this node took its cluster's ownership lease and is about to become the
   * active (it serves once this returns, unless something holds it). A slot map's re-read starts here.
   */
  leaseTaken?(): void;
  /**
   * With a coordinator: this node is about to ask for the lease, and the epochs that come with it
   * from the store's counter. The callback it returns, if any, runs once the epoch is in use (a slot
   * map's gains known before the request are then covered by it: SlotGate.epochInUse).
   */
  askingLease?(): (() => void) | undefined;
}

export interface ClusterOptions {
  readonly peers: readonly string[];
  readonly advertise: string;
  readonly timing: ClusterTiming;
  /**
   * The cluster's peer token, which incoming links prove in the peer handshake (docs/protocol.md).
   * An empty key lets anyone who reaches the port join (lockd allows that only with --insecure).
   */
  readonly key: PeerKey;
  /** Opens the outgoing link to each peer: sockets in lockd, memory in the simulator. */
  readonly links: LinkFactory;
  readonly handoffTimeoutMs: number;
  /** The most holders a peer's snapshot may carry: this node's key limit (it could not hold more). */
  readonly maxSnapshotHolders: number;
  /** With `--coordinator`: the store, and this node's name and lease there. Without: heartbeats alone. */
  readonly coordination?: CoordinationOptions;
  /** @internal How a standby spreads a snapshot's load over turns: the simulator's, to reach its middle. */
  readonly loadPacing?: LoadPacing;
}

export interface CoordinationOptions {
  readonly store: CoordinationStore;
  /** `--cluster-name`. */
  readonly cluster: string;
  /** This process's holder name (`ownershipHolder`). */
  readonly holder: string;
  readonly leaseMs: number;
  readonly marginMs: number;
}

export interface ClusterEvents {
  roleChanged(role: NodeRole, reason: string, epoch: bigint): void;
  /** A standby learned (or lost) the active it redirects clients to. */
  following(active: string | undefined): void;
  /** A peer refused this node's link (wrong auth token, wrong peer token, not a cluster node…). */
  peerRefused(address: string, reply: string): void;
  /**
   * An incoming connection sent peer frames without authenticating as a peer, or failed the peer
   * handshake: refused and closed. `node` is the address it claimed, if any. Rate-limited: `count`
   * is how many refusals this report stands for (the latest one's details).
   */
  peerRejected(remote: string, node: string | undefined, reason: string, count: number): void;
  /**
   * An authenticated peer link broke the peer protocol (either direction) and was dropped before
   * the frame was applied. Rate-limited like `peerRejected`.
   */
  peerLinkDropped(peer: string, reason: string, count: number): void;
  /** An epoch from a peer was not believed (far beyond any clock), or none could be taken. */
  epochRefused(from: string, epoch: bigint, reason: string): void;
  /** This process did not run for `gapMs` (SIGSTOP, VM pause, GC); as active it holds grants. */
  stalled(gapMs: number, role: NodeRole): void;
  /** This node, active, serves clients from now on (after a promotion, or once a hold ended). */
  serving(epoch: bigint): void;
  /**
   * A peer became live (heard within the peer timeout) or stopped being live: once per change, seen
   * at a heartbeat tick. `role` is the one it last announced. After a stall of this process a peer
   * is reported lost only once the listening period is over (until then its silence may be ours).
   */
  peerLiveness(address: string, live: boolean, role: NodeRole | undefined): void;
  /** With a coordinator: another node (`holder`) has the ownership lease this node tried to take. */
  leaseRefused?(holder: string | undefined): void;
  /** With a coordinator: a store call failed (`operation` is retried). */
  coordinatorUnavailable?(operation: string, error: unknown): void;
}
