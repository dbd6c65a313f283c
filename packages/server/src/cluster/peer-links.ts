import { encodePeer } from "@lock/protocol";
import type { LockNode } from "../node.js";
import type { ClusterLink, LinkFactory } from "./link.js";
import type { Membership, PeerState } from "./membership.js";
import { SYNCED_FLAG_PEER_PROTOCOL } from "./peer/peer-version.js";
import type { PeerReports } from "./peer-reports.js";
import type { Replicator } from "./replicator.js";

/** What the outgoing links need of the rest of the node. */
export interface PeerLinksDeps {
  readonly node: LockNode;
  readonly membership: Membership;
  readonly replicator: Replicator;
  readonly reports: PeerReports;
  readonly open: LinkFactory;
}

/**
 * This node's outgoing link to every peer, and what goes out on them: its join and heartbeats, and
 * while active the replication stream (a snapshot for each live standby that has none on its current
 * connection). Also answers which standby is synced: one that acknowledged its snapshot. Runs on the
 * node's event loop.
 */
export class PeerLinks {
  readonly #deps: PeerLinksDeps;
  /** By peer index (this node has none to itself). */
  readonly byIndex = new Map<number, ClusterLink>();

  constructor(deps: PeerLinksDeps) {
    this.#deps = deps;
  }

  /** Dials every peer; each link redials by itself until `closeAll`. */
  open(): void {
    const { node, membership, replicator, reports } = this.#deps;
    for (const peer of membership.peers) {
      if (peer.index === membership.self) continue;
      const link = this.#deps.open(peer.address, {
        hello: () =>
          encodePeer({
            peer: "J",
            node: membership.selfAddress,
            role: node.role,
            epoch: node.epoch,
            highest: node.highestEpoch,
          }),
        onConnect: (connected) => {
          replicator.disconnected(connected);
          membership.reachable(peer);
        },
        onDisconnect: (gone) => replicator.disconnected(gone),
        onAck: (from, seq) => {
          // Nothing past what this node has sent can be acknowledged.
          if (seq > replicator.seq) {
            reports.violation(from.address, `!K ${seq} beyond the stream sent (${replicator.seq})`);
            from.reset();
            return;
          }
          replicator.acknowledged(from, seq);
        },
        onRefused: (from, reply) => reports.refused(from.address, reply),
        onViolation: (from, reason) => reports.violation(from.address, reason),
      });
      this.byIndex.set(peer.index, link);
    }
  }

  /**
   * A heartbeat to every peer: this node's role (a standby while `handingOff`: it no longer serves,
   * and the successor must not see a rival active), its epochs, and the active it hears itself (or
   * itself), never one it only heard of: see Membership.vouchedActive. A standby still `listening`
   * after its start or a stall names none: what it read first may have waited in its sockets while
   * it was stopped, from an active that died meanwhile, and a peer that cannot hear that active
   * itself (a one-way cut) would step down for it (found by the simulator, seed 8931).
   * `synced`: this standby's table is a whole copy of an active's (Standby.syncedSince), said to
   * peers of protocol 2 and later (lockd 0.1.0 refuses the field).
   */
  sendHeartbeat(handingOff: boolean, synced: boolean): void {
    const { node, membership } = this.#deps;
    const heardActive =
      node.role === "active"
        ? membership.selfAddress
        : membership.listening
          ? undefined
          : membership.liveActive()?.address;
    const frame = {
      peer: "B",
      node: membership.selfAddress,
      role: handingOff ? "standby" : node.role,
      epoch: node.epoch,
      ...(heardActive ? { active: heardActive } : {}),
      highest: node.highestEpoch,
    } as const;
    const line = encodePeer({ ...frame, synced: node.role === "standby" && synced });
    const withoutFlag = encodePeer(frame);
    for (const link of this.byIndex.values()) {
      const saysSynced = link.peerProtocol === undefined || link.peerProtocol >= SYNCED_FLAG_PEER_PROTOCOL;
      link.send(saysSynced ? line : withoutFlag);
    }
  }

  /** Sends what is batched, then stops redialling and closes every link. */
  closeAll(): void {
    for (const link of this.byIndex.values()) {
      link.flush();
      link.close();
    }
  }

  /** A peer that was active and is now a standby holds someone else's state: it needs our snapshot. */
  needsSnapshot(peer: PeerState): void {
    const link = this.byIndex.get(peer.index);
    if (link) this.#deps.replicator.restart(link);
  }

  /** While active: a snapshot to every live standby whose current connection has none. */
  snapshotNewStandbys(): void {
    const { membership, replicator, node } = this.#deps;
    for (const [index, link] of this.byIndex) {
      const peer = membership.peers[index]!;
      if (!link.connected || peer.role !== "standby" || !membership.isLive(peer)) continue;
      if (!replicator.isStreaming(link)) replicator.sendSnapshot(link, node.holderTable, node.epoch);
    }
  }

  /** A live standby that acknowledged the snapshot sent on its current connection. */
  isSyncedStandby(peer: PeerState): boolean {
    const link = this.byIndex.get(peer.index);
    return (
      peer.role === "standby" &&
      this.#deps.membership.isLive(peer) &&
      link !== undefined &&
      this.#deps.replicator.isSynced(link)
    );
  }

  /**
   * Calls `then` with the highest-priority synced standby, or undefined. A live standby that has not
   * acknowledged its snapshot yet (it just joined) gets up to one peer timeout to do so: handing off
   * beats a failover. Stepped by acknowledgements and timers, no promise in between.
   */
  findSyncedSuccessor(then: (successor: PeerState | undefined) => void): void {
    const { membership, node, replicator } = this.#deps;
    const others = membership.peers.filter((peer) => peer.index !== membership.self);
    const deadline = node.clock.now() + membership.timing.peerTimeoutMs;
    const check = (): void => {
      const synced = others.find((peer) => this.isSyncedStandby(peer));
      const joining = others.some((peer) => peer.role === "standby" && membership.isLive(peer));
      if (synced || !joining || node.clock.now() >= deadline) {
        then(synced);
        return;
      }
      this.snapshotNewStandbys();
      // Its acknowledgement is what makes it synced; the timeout re-checks liveness meanwhile.
      replicator.nextAck(10, check);
    };
    check();
  }
}
