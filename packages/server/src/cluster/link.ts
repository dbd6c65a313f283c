import type { ReplicaLink } from "./replicator.js";

/**
 * What happens on a link to one peer, reported to the Cluster. Called from the link's own I/O, one
 * at a time, in the order the link saw them.
 */
export interface LinkEvents {
  /** The first lines to send once the link is up (`!J …`). */
  hello(): string;
  onConnect(link: ClusterLink): void;
  onDisconnect(link: ClusterLink): void;
  /** The peer acknowledged the stream up to `seq`. */
  onAck(link: ClusterLink, seq: number): void;
  /** The peer answered with an error line, e.g. `AUTH_FAILED`: the link is useless until fixed. */
  onRefused(link: ClusterLink, line: string): void;
  /** The peer broke the protocol (or failed to prove the peer token): the connection was dropped. */
  onViolation(link: ClusterLink, reason: string): void;
}

/**
 * This node's outgoing link to one peer: heartbeats and the replication stream go out on it,
 * acknowledgements come back. `PeerLink` is the socket adapter; `MemoryLink` the in-memory one of
 * tests and the simulator. A link redials by itself until `close()`; frames sent while it is not
 * connected are dropped (the peer gets a snapshot after it reconnects).
 */
export interface ClusterLink extends ReplicaLink {
  readonly address: string;
  /** Frames sent now reach the peer (the handshake is done on the current connection). */
  readonly connected: boolean;
  /** The peer protocol the peer spoke in its handshake, while connected; undefined if not known. */
  readonly peerProtocol?: number | undefined;
  /** Drops the current connection; the link redials (a slow peer, a resync). */
  reset(): void;
  close(): void;
}

/** Opens the link to the peer at `address` (its `--peers` entry). */
export type LinkFactory = (address: string, events: LinkEvents) => ClusterLink;
