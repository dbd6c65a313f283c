import { tokenEpoch } from "@lock/protocol";
import { EpochExhaustedError } from "../epoch/epoch-plan.js";
import type { LockNode } from "../node.js";
import type { ClusterEvents, ClusterServerHooks } from "./cluster-api.js";
import type { ClusterLink } from "./link.js";
import type { Decision, Membership, PeerState } from "./membership.js";
import type { Replicator } from "./replicator.js";
import type { Standby } from "./standby.js";

/** What carrying out a role change needs of the node and of the rest of the Cluster. */
export interface RoleDeps {
  readonly node: LockNode;
  readonly replicator: Replicator;
  readonly hooks: ClusterServerHooks;
  readonly events: ClusterEvents;
  readonly membership: Membership;
  readonly standby: Standby;
  /** Outgoing links by peer index (a handoff goes out on the successor's). */
  readonly links: ReadonlyMap<number, ClusterLink>;
  readonly handoffTimeoutMs: number;
}

/**
 * What a role change leaves for the Cluster to do: `announce`, a heartbeat tick now (a new active
 * tells its peers its epoch before it answers anyone).
 */
export type RoleEffect = "announce";

/**
 * The Cluster's role changes, carried out: promotion with an epoch above every epoch known, demotion,
 * moving above a rival's epoch, handoff, and learning epochs (an active that learns of a later one
 * moves above it before its next grant), and whom a standby follows. Membership decides; this acts,
 * and returns what is left for the Cluster to do (`RoleEffect`) instead of calling back into it.
 * Runs on the node's event loop, one call at a time; a handoff spans events (until its
 * acknowledgement or timeout), during which `busy` and `handingOff` hold.
 */
export class RoleChanges {
  readonly #deps: RoleDeps;
  readonly counters = { promotions: 0, demotions: 0, handoffs: 0, epochRaises: 0 };
  #busy = false;
  #handingOff = false;

  /** A handoff is under way: decide nothing new. */
  get busy(): boolean {
    return this.#busy;
  }

  /** Handing the role off: no longer serving, but the successor has not acknowledged yet. */
  get handingOff(): boolean {
    return this.#handingOff;
  }

  constructor(deps: RoleDeps) {
    this.#deps = deps;
  }

  /**
   * Records an epoch heard from `from`. An active that learns of a later epoch moves above it at
   * once, before it grants again: every token it issues after learning of an epoch exceeds that
   * epoch's tokens.
   */
  learn(from: string, epoch: bigint): void {
    const outcome = this.#deps.node.learnEpoch(epoch);
    if (outcome === "implausible") {
      this.#deps.events.epochRefused(from, epoch, "its round is more than a day ahead of this node's clock");
      return;
    }
    if (outcome === "raised" && this.#deps.node.role === "active" && !this.#handingOff)
      this.act({ action: "raise-epoch", above: epoch });
  }

  /** `--peers` heard in full since start, or the snapshot of an active that had: see epoch-plan.ts. */
  informed(): boolean {
    return this.#deps.standby.syncedFromActive || this.#deps.membership.heardEveryPeer();
  }

  /** Takes the next epoch; false (reported, role unchanged) if none fits the layout. */
  #takeEpoch(informed: boolean): bigint | undefined {
    try {
      return this.#deps.node.takeEpoch(informed);
    } catch (error) {
      if (!(error instanceof EpochExhaustedError)) throw error;
      this.#deps.events.epochRefused(
        this.#deps.membership.selfAddress,
        this.#deps.node.highestEpoch,
        error.message,
      );
      return undefined;
    }
  }

  /**
   * What Membership decides now, carried out. An active held after a stall steps down or moves above
   * a rival at once, but hands off only once `stallConfirmed` (and is released from the hold then).
   */
  decide(synced: (peer: PeerState) => boolean, stallConfirmed: () => boolean): RoleEffect | undefined {
    const node = this.#deps.node;
    const decision = this.#deps.membership.decide(
      { role: node.role, epoch: node.epoch, highestKnown: node.highestEpoch, busy: this.#busy },
      synced,
    );
    const held = node.isHeld("stall");
    const effect = held && decision.action === "handoff" ? undefined : this.act(decision);
    if (held && node.role === "active" && stallConfirmed()) node.endHold("stall");
    return effect;
  }

  act(decision: Decision): RoleEffect | undefined {
    switch (decision.action) {
      case "none":
        return undefined;
      case "promote":
        return this.promote("no live active or higher-priority node");
      case "demote":
        this.#demote(decision.to);
        return undefined;
      case "raise-epoch": {
        const epoch = this.#takeEpoch(this.informed());
        if (epoch === undefined) return undefined;
        this.#deps.replicator.announceEpoch(epoch);
        this.counters.epochRaises += 1;
        this.#deps.events.roleChanged(
          "active",
          `raised epoch above a rival active's ${decision.above}`,
          epoch,
        );
        return undefined;
      }
      case "handoff":
        this.handoff(decision.to, "a higher-priority node is back and synced");
        return undefined;
    }
  }

  /**
   * The followed active `from` handed its role to this node (`!O`). It stopped serving as it sent
   * that, and follows this node from here (with the snapshot the promotion sends), so its next
   * "standby" heartbeat is no step down that would need another one. Its knowledge is this node's
   * now (`!O` carries its highest epoch): the promotion is informed.
   */
  takeHandoff(from: string): RoleEffect | undefined {
    const peer = this.#deps.membership.peerByAddress(from);
    if (peer) this.#deps.membership.steppedDown(peer);
    return this.promote("handoff", true);
  }

  /** Becomes the active with an epoch above every epoch known, so its tokens exceed all earlier ones. */
  promote(reason: string, informed = this.informed()): RoleEffect | undefined {
    // Replicated holders' tokens are known epochs too (a `!P` may not have reached this node).
    this.learn(this.#deps.membership.selfAddress, tokenEpoch(this.#deps.node.holderTable.maxHeldToken()));
    const epoch = this.#takeEpoch(informed);
    if (epoch === undefined) return undefined;
    this.#deps.standby.detach();
    this.#deps.replicator.stopAll();
    this.#deps.replicator.enabled = true;
    this.#deps.node.setRole("active", this.#deps.membership.selfAddress);
    this.counters.promotions += 1;
    this.#deps.events.roleChanged("active", reason, epoch);
    return "announce";
  }

  /** Points clients at `active` (a standby's active; undefined while it knows none). */
  follow(active: string | undefined): void {
    if (this.#deps.node.follow(active)) this.#deps.events.following(active);
  }

  /** Steps down for a higher-priority active: its clients are redirected, its state dropped. */
  #demote(to: PeerState): void {
    this.#stepDownTo(to.address, { keepTable: false });
    this.counters.demotions += 1;
    this.#deps.events.roleChanged(
      "standby",
      `a higher-priority active is live (${to.address})`,
      this.#deps.node.epoch,
    );
  }

  /** Stops being the active: nothing more is replicated, queued acquires go to `address`. */
  #stepDownTo(address: string, { keepTable }: { keepTable: boolean }): void {
    this.#deps.replicator.enabled = false;
    this.#deps.replicator.stopAll();
    this.#deps.node.setRole("standby", undefined);
    this.follow(address);
    this.#deps.hooks.redirectPending(address);
    if (!keepTable) this.#deps.node.holderTable.clear();
  }

  /**
   * Hands the active role to `to`: stop reading clients, send the handoff after the whole stream,
   * and once the successor promoted and acknowledged (or did not in time), end it: `#handoffEnded`.
   * A handoff is a state (`busy`, `handingOff`) that the acknowledgement or the timeout ends, not a
   * promise: nothing of it runs between events. `done` is called once it ended.
   */
  handoff(to: PeerState, reason: string, done: () => void = () => {}): void {
    const link = this.#deps.links.get(to.index);
    if (!link) {
      done();
      return;
    }
    this.#busy = true;
    this.#handingOff = true;
    this.#deps.hooks.pauseClients();
    // No lease may expire (and hand its key to a waiter) here: the successor already has the table.
    this.#deps.node.setRole("standby", undefined);
    // The successor takes an epoch above everything this node knows of, not just its own epoch.
    this.#deps.replicator.handoff(
      link,
      this.#deps.node.highestEpoch,
      this.#deps.handoffTimeoutMs,
      (acked) => {
        try {
          this.#handoffEnded(to, reason, acked);
        } finally {
          this.#deps.hooks.resumeClients();
          this.#handingOff = false;
          this.#busy = false;
        }
        done();
      },
    );
  }

  /** Acknowledged: step down for `to`. Not: serve again, above any epoch heard meanwhile. */
  #handoffEnded(to: PeerState, reason: string, acked: boolean): void {
    if (!acked) {
      this.#deps.node.setRole("active", this.#deps.membership.selfAddress);
      // Epochs heard while handing off raised nothing: move above them before serving again.
      const highest = this.#deps.node.highestEpoch;
      if (highest > this.#deps.node.epoch) this.act({ action: "raise-epoch", above: highest });
      return;
    }
    // The successor may already have sent its snapshot (on another connection): keep that one.
    this.#stepDownTo(to.address, { keepTable: this.#deps.standby.source === to.address });
    this.#deps.membership.assumeRole(to, "active");
    this.counters.handoffs += 1;
    this.#deps.events.roleChanged("standby", `handed off to ${to.address}: ${reason}`, this.#deps.node.epoch);
  }
}
