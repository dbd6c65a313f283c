import { tokenEpoch } from "@lock/protocol";
import type { AcquireResult, Ownership } from "../coordination/ownership.js";
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
  /** With a coordinator: this node's ownership lease, which alone makes it the active. */
  readonly ownership: Ownership | undefined;
  /** The node is shutting down: it takes no role it would have to hand back. */
  readonly stopping: () => boolean;
  /** Carries out an effect that a store call's answer left (they arrive between events). */
  readonly apply: (effect: RoleEffect | undefined) => void;
}

/**
 * What a role change leaves for the Cluster to do: `announce`, a heartbeat tick now (a new active
 * tells its peers its epoch before it answers anyone); `retry-lease`, decide again a little before
 * the next tick (the lease this node was refused may be freed any moment).
 */
export type RoleEffect = "announce" | "retry-lease";

/**
 * After a refused lease, how long a standby keeps asking more often than every heartbeat, past the
 * lease's length: its holder stopped renewing at most a lease ago if it is dead. A holder that
 * goes on renewing (a partition) is asked every heartbeat after that, as before.
 */
const FAST_LEASE_RETRY_EXTRA_MS = 1_000;

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
  /** When the lease was first refused to this node in a row of refusals (fast retries: see above). */
  #refusedSince: number | undefined;

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
      {
        role: node.role,
        epoch: node.epoch,
        highestKnown: node.highestEpoch,
        busy: this.#busy,
        syncedSince: this.#deps.standby.syncedSince,
      },
      synced,
    );
    if (decision.action !== "promote") this.#refusedSince = undefined;
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
        // Not with half a table: a snapshot being loaded is whole within seconds even at millions
        // of holders, and the decision is made again at each tick (docs/consistency.md).
        if (this.#deps.standby.loading) return undefined;
        return this.promote("no live active or higher-priority node");
      case "demote":
        // With a coordinator the lease decides: a peer that claims the role without it stops
        // granting when its lease runs out, and this node steps down only when it loses its own.
        if (!this.#deps.ownership) this.#demote(decision.to);
        return undefined;
      case "raise-epoch": {
        if (this.#deps.ownership) {
          this.#raiseFromStore(this.#deps.ownership, decision.above);
          return undefined;
        }
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
    // While the lease is taken, clients connected here wait in their sockets.
    if (this.#deps.ownership) this.#deps.hooks.pauseClients();
    return this.promote("handoff", true);
  }

  /**
   * Becomes the active with an epoch above every epoch known, so its tokens exceed all earlier ones.
   * With a coordinator, only once it holds the ownership lease, with an epoch from the store
   * (`#promoteWithLease`): nothing changes before that.
   */
  promote(reason: string, informed = this.informed()): RoleEffect | undefined {
    // Replicated holders' tokens are known epochs too (a `!P` may not have reached this node).
    this.learn(this.#deps.membership.selfAddress, tokenEpoch(this.#deps.node.holderTable.maxHeldToken()));
    if (this.#deps.ownership) {
      this.#promoteWithLease(this.#deps.ownership, reason);
      return undefined;
    }
    const epoch = this.#takeEpoch(informed);
    if (epoch === undefined) return undefined;
    return this.#becomeActive(reason, epoch);
  }

  #becomeActive(reason: string, epoch: bigint): RoleEffect {
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
  #stepDownTo(address: string | undefined, { keepTable }: { keepTable: boolean }): void {
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
    const send = () => this.#sendHandoff(to, reason, link, done);
    // With a coordinator the lease goes first, so the successor can take it at once.
    if (this.#deps.ownership) void this.#deps.ownership.release().then(send);
    else send();
  }

  #sendHandoff(to: PeerState, reason: string, link: ClusterLink, done: () => void): void {
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
    if (!acked && this.#deps.ownership) {
      // The lease is given up already: whoever takes it next is the active (maybe this node again).
      this.#stepDownTo(undefined, { keepTable: true });
      this.#deps.events.roleChanged(
        "standby",
        `handoff to ${to.address} not acknowledged`,
        this.#deps.node.epoch,
      );
      return;
    }
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

  // With a coordinator (docs/consistency.md, "With a coordinator").

  /**
   * Takes the ownership lease and a store epoch, then becomes the active; stays a standby if
   * another node holds the lease or the store cannot be reached (the next tick tries again). Busy
   * meanwhile, so nothing else is decided. Clients paused for a handoff resume either way.
   */
  #promoteWithLease(ownership: Ownership, reason: string): void {
    const node = this.#deps.node;
    this.#busy = true;
    // Meanwhile clients get NO_ACTIVE here, not a redirect to the active it replaces (which may
    // send them straight back while it learns of this node).
    this.follow(undefined);
    const epochInUse = this.#deps.hooks.askingLease?.();
    ownership.acquire(node.highestEpoch).then(
      (result) => {
        // A snapshot that began loading while the lease was asked for is served whole: this node
        // stays busy (clients paused, if they were) until it is.
        const answered = () => this.#leaseAnswered(ownership, reason, result, epochInUse);
        if (result.owned) this.#deps.standby.afterLoad(answered);
        else answered();
      },
      (error: unknown) => {
        this.#busy = false;
        this.#deps.events.coordinatorUnavailable?.("take the ownership lease", error);
        this.#deps.hooks.resumeClients();
      },
    );
  }

  /** The store answered a promotion's request for the lease (`#promoteWithLease`). */
  #leaseAnswered(
    ownership: Ownership,
    reason: string,
    result: AcquireResult,
    epochInUse: (() => void) | undefined,
  ): void {
    const node = this.#deps.node;
    this.#busy = false;
    if (!result.owned) {
      this.#deps.events.leaseRefused?.(result.holder);
      this.#retryRefusedLease(ownership);
    } else if (!ownership.held) {
      // Lost while a snapshot finished loading: the next decision asks again.
    } else if (this.#deps.stopping() || node.role === "active") {
      void ownership.release();
    } else {
      this.#refusedSince = undefined;
      // Before it serves: a slot map learned by the watch may be older than a move its
      // predecessor committed (docs/consistency.md, "Moving slots").
      this.#deps.hooks.leaseTaken?.();
      node.useEpoch(result.epoch);
      epochInUse?.();
      if (!ownership.valid()) node.hold("lease");
      this.#deps.apply(this.#becomeActive(reason, result.epoch));
    }
    this.#deps.hooks.resumeClients();
  }

  /**
   * The store freed a dead holder's lease somewhere within a lease of its last renewal (etcd deletes
   * the key in its lessor's next sweep): asking only at heartbeat ticks would add up to a heartbeat
   * to every failover, so for a lease and a bit after the first refusal the Cluster asks sooner.
   */
  #retryRefusedLease(ownership: Ownership): void {
    const now = this.#deps.node.clock.now();
    this.#refusedSince ??= now;
    if (now - this.#refusedSince <= ownership.leaseMs + FAST_LEASE_RETRY_EXTRA_MS)
      this.#deps.apply("retry-lease");
  }

  /**
   * An active that learned of an epoch above its own: it grants nothing until it has a store epoch
   * above it. If another node took the lease meanwhile, the renewal says so (`leaseLost`).
   */
  #raiseFromStore(ownership: Ownership, above: bigint): void {
    const node = this.#deps.node;
    this.#busy = true;
    node.hold("lease");
    ownership.takeEpoch(above).then(
      (epoch) => {
        this.#busy = false;
        if (node.role !== "active" || epoch <= node.epoch) return;
        this.#raiseTo(epoch, `raised epoch above ${above} (from the coordinator)`);
        this.leaseValidityChanged();
      },
      (error: unknown) => {
        this.#busy = false;
        this.#deps.events.coordinatorUnavailable?.("take an epoch", error);
      },
    );
  }

  /**
   * Slots moved to this cluster (SlotMoves): an epoch from the store's counter taken now, so above
   * every epoch their source granted from before it committed the move. Resolves whether this
   * node, still the active, grants from it (or from one at least as high) now.
   */
  async raiseForGainedSlots(): Promise<boolean> {
    const ownership = this.#deps.ownership;
    const node = this.#deps.node;
    const stillActive = () => ownership?.held === true && node.role === "active" && !this.#busy;
    if (!ownership || !stillActive()) return false;
    const epoch = await ownership.takeEpoch(node.highestEpoch);
    if (!stillActive()) return false;
    if (epoch > node.epoch)
      this.#raiseTo(epoch, "took a fresh epoch for slots moved here (from the coordinator)");
    return true;
  }

  /** The active grants from `epoch`, a store epoch above its own, from now on; standbys learn it. */
  #raiseTo(epoch: bigint, reason: string): void {
    this.#deps.node.useEpoch(epoch);
    this.#deps.replicator.announceEpoch(epoch);
    this.counters.epochRaises += 1;
    this.#deps.events.roleChanged("active", reason, epoch);
  }

  /** The lease may have become valid or lapsed: an active grants only while it is valid. */
  leaseValidityChanged(): void {
    const ownership = this.#deps.ownership;
    const node = this.#deps.node;
    if (!ownership || node.role !== "active" || this.#busy) return;
    if (ownership.valid() && node.highestEpoch <= node.epoch) node.endHold("lease");
    else node.hold("lease");
  }

  /**
   * The store says this node's lease is gone: it is a standby at once. It follows nobody until
   * heartbeats name the next active: the lease's new holder may not serve yet (it still takes its
   * epochs, or its answer was lost and it never will), and it may be following this node still.
   */
  leaseLost(holder: string | undefined): void {
    if (this.#deps.node.role !== "active" || this.#handingOff) return;
    this.#stepDownTo(undefined, { keepTable: true });
    this.counters.demotions += 1;
    this.#deps.events.roleChanged(
      "standby",
      `lost the ownership lease${holder === undefined ? "" : ` to ${holder}`}`,
      this.#deps.node.epoch,
    );
  }
}
