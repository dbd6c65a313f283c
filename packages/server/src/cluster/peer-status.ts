import type { LockNode } from "../node.js";
import type { Membership } from "./membership.js";
import type { PeerLinks } from "./peer-links.js";
import type { Replicator } from "./replicator.js";

/** Every peer (this node included) as `/status` shows it. */
export function peerStatus(node: LockNode, membership: Membership, links: PeerLinks, replicator: Replicator) {
  return membership.peers.map((peer) => {
    const link = links.byIndex.get(peer.index);
    const self = peer.index === membership.self;
    return {
      address: peer.address,
      priority: peer.index,
      self,
      role: self ? node.role : (peer.role ?? null),
      // A standby's own: the epoch of the active it follows (LockNode.reportedEpoch). Another
      // standby's heartbeats carry its table's epoch, which means nothing: see `follows`.
      epoch: (self ? node.reportedEpoch : peer.epoch).toString(),
      /** The active this peer follows, as its heartbeats say (this node's own for its row). */
      follows: self
        ? node.role === "standby"
          ? (node.activeAddress ?? null)
          : null
        : peer.role === "standby"
          ? (peer.active ?? null)
          : null,
      live: membership.isLive(peer),
      linkConnected: self ? null : (link?.connected ?? false),
      replicationLag: link && node.role === "active" ? (replicator.lag(link) ?? null) : null,
    };
  });
}
