/**
 * What the net layer (the composition root of lockd) may use of the cluster: building a cluster
 * node, its events and timing, the peer key and socket links, and the PeerListener its connections
 * hand peer frames to. Everything else in cluster/ is the cluster's own (`pnpm lint:deps` holds
 * net/ to this file); the simulator in cluster/sim/ composes the same parts over its network.
 */
export type { Cluster } from "./cluster.js";
export type { ClusterEvents, ClusterServerHooks, CoordinationOptions } from "./cluster-api.js";
export { type ClusterNode, type ClusterNodeOptions, createClusterNode } from "./cluster-node.js";
export { type ClusterTiming, DEFAULT_CLUSTER_TIMING } from "./membership.js";
export { PeerKey } from "./peer/peer-auth.js";
export type { IncomingConnection, PeerListener, PeerRefusal } from "./peer/peer-listener.js";
export { type PeerDialOptions, peerLinks } from "./peer-link.js";
