import type { NodeRole } from "@lock/protocol";
import type { Membership } from "./membership.js";
import { ListenerHandshake } from "./peer/handshake.js";
import type { PeerKey } from "./peer/peer-auth.js";
import { type IncomingConnection, PeerListener, type PeerListenerDeps } from "./peer/peer-listener.js";
import type { PeerSession, PeerSessionHandler, SessionFrame, Snapshot } from "./peer/peer-session.js";
import type { PeerLinks } from "./peer-links.js";
import type { PeerReports } from "./peer-reports.js";
import type { RoleChanges, RoleEffect } from "./roles.js";
import type { Standby } from "./standby.js";

/** What the incoming side needs of the node, and what applying frames may ask of the Cluster. */
export interface IncomingPeersDeps {
  /** The cluster's peer token, proved in each handshake. */
  readonly key: PeerKey;
  /** The most holders a peer's snapshot may carry: this node's key limit. */
  readonly maxSnapshotHolders: number;
  readonly membership: Membership;
  readonly roles: RoleChanges;
  readonly standby: Standby;
  readonly links: PeerLinks;
  readonly reports: PeerReports;
  /** The node is stopping: it takes no role it would have to hand straight back. */
  stopping(): boolean;
  /** Carries out what a role change left to the Cluster. */
  apply(effect: RoleEffect | undefined): void;
}

/**
 * The incoming side of this node's peer links: a PeerListener for each connection that sends peer
 * frames (the handshake, then the link's checks), and the routing of each checked frame to its
 * owner: heartbeats and joins to Membership (and the epochs they tell to RoleChanges), the stream
 * and snapshots to the Standby, a handoff to RoleChanges. Runs on the node's event loop, one frame
 * at a time, in stream order.
 */
export class IncomingPeers implements PeerSessionHandler {
  readonly #deps: IncomingPeersDeps;
  readonly #listening: PeerListenerDeps;

  constructor(deps: IncomingPeersDeps) {
    this.#deps = deps;
    const { key, membership, reports } = deps;
    const isPeer = (address: string) => membership.isOtherPeer(address);
    this.#listening = {
      handshake: () => new ListenerHandshake(key, membership.selfAddress, isPeer),
      handler: this,
      rejected: (remote, claimed, reason) => reports.rejected(remote, claimed, reason),
      maxSnapshotHolders: deps.maxSnapshotHolders,
    };
  }

  /** The peer side of one incoming connection: its handshake, then its link's frames. */
  listen(connection: IncomingConnection): PeerListener {
    return new PeerListener(this.#listening, connection);
  }

  isMember(address: string): boolean {
    return this.#deps.membership.peerByAddress(address) !== undefined;
  }

  /** An authenticated incoming link broke the protocol (reported rate-limited). */
  violated(session: PeerSession, reason: string): void {
    this.#deps.reports.violation(session.peer, reason);
  }

  /**
   * A frame from a peer's incoming connection (its heartbeats; the active's stream), checked by
   * its PeerSession: the sender proved it is `session.peer`, and the frame fits the stream.
   */
  onPeerFrame(session: PeerSession, frame: SessionFrame): void {
    switch (frame.peer) {
      case "J":
        this.#deps.standby.joined(session);
        this.#heard(session.peer, frame.role, frame.epoch, undefined, frame.highest);
        return;
      case "B":
        this.#heard(session.peer, frame.role, frame.epoch, frame.active, frame.highest, frame.synced);
        return;
    }
    // An epoch is learned from whoever tells it, followed or not, standby or active: a rival active
    // announcing its raised epoch (`!P`) to a node it still streams to must move that node above it
    // before its next grant, not only at the rival's next heartbeat (found by the simulator).
    if (frame.peer === "P" || frame.peer === "O") this.#deps.roles.learn(session.peer, frame.epoch);
    if (this.#deps.standby.receive(session, frame) === "handoff") this.#takeHandoff(session, frame.seq);
  }

  /** A complete snapshot from an active's link (Standby decides whether it replaces the replica). */
  applySnapshot(session: PeerSession, snapshot: Snapshot): void {
    this.#deps.standby.applySnapshot(session, snapshot);
  }

  /** The followed active hands its role to this node (`!O`). */
  #takeHandoff(session: PeerSession, seq: number): void {
    if (this.#deps.stopping()) {
      // Leaving: refuse by dropping the link, so the sender's handoff fails now and it stays
      // the active, instead of waiting out its handoff timeout for an acknowledgement.
      session.close();
      return;
    }
    this.#deps.apply(this.#deps.roles.takeHandoff(session.peer));
    // Acknowledge at once: the old active redirects its clients only after this.
    session.acknowledgeNow(seq);
  }

  #heard(
    address: string,
    role: NodeRole,
    epoch: bigint,
    active: string | undefined,
    highest: bigint,
    synced?: boolean,
  ): void {
    const heard = this.#deps.membership.heard(address, role, epoch, active, synced);
    if (!heard) return;
    // A frame's epoch is never above its highest (PeerSession checks it): the highest covers both.
    this.#deps.roles.learn(address, highest);
    if (heard.previousRole === "active" && role === "standby") this.#deps.links.needsSnapshot(heard.peer);
  }
}
