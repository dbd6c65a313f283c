import type { Timer, TimerQueue } from "@lock/deadline-heap";
import { KEY_SLOTS, keySlot, type SlotMap } from "@lock/protocol";
import type { CoordinationStore } from "../coordination/store.js";
import type { LockNode } from "../node.js";
import type { OutgoingRange, SlotGate } from "./slot-gate.js";
import { SLOT_MAP_DOCUMENT } from "./slot-map-follower.js";

/** How often an active with a move under way looks again (holders released, a lease ran out). */
export const SLOT_MOVE_POLL_MS = 25;
/** After a failed epoch raise or commit: the store is down or the node busy, so ask less often. */
const RETRY_AFTER_FAILURE_MS = 250;
/** Keys looked at per turn while scanning the table for a moving slot's keys (keeps turns short). */
const SCAN_CHUNK = 10_000;

/** What SlotMoves needs of the cluster node it runs on. */
export interface SlotMovesHost {
  /** This node is its cluster's active: only the active drains, raises and commits. */
  active(): boolean;
  /** It may commit a move now: the active, serving, its ownership lease valid by its clock. */
  mayCommit(): boolean;
  /**
   * Takes an epoch from the store's counter above every epoch known and grants from it; resolves
   * true once it is in use (or one at least as high already was), false if it could not.
   */
  raiseEpoch(): Promise<boolean>;
}

export interface SlotMoveEvents {
  /** Queued acquires of a moving slot's key were refused (`SLOT_MOVING`). */
  withdrawn?(count: number): void;
  /** A move's source committed it: its target owns the ranges from map `version` on. */
  committed?(ranges: readonly OutgoingRange[], version: bigint): void;
  /**
   * Slots this cluster gained may be granted in from now on: an epoch taken after the gain is in use
   * (a raise, or the epochs of the lease a promotion took).
   */
  gainsServed?(): void;
  /** A store call of a move failed (it is retried). */
  storeFailed?(operation: string, error: unknown): void;
}

export interface SlotMovesOptions {
  readonly gate: SlotGate;
  readonly store: CoordinationStore;
  readonly node: LockNode;
  readonly timers: TimerQueue;
  readonly host: SlotMovesHost;
  readonly events?: SlotMoveEvents;
  /**
   * @internal The simulator's mutation: gained slots are served with the epoch in use, no fresh
   * one. Its checker must then find a token that went backwards across a move.
   */
  readonly skipEpochRaise?: boolean;
}

/** A drain of the ranges a map version moves away: the table scanned once, then its keys polled. */
interface Drain {
  readonly map: SlotMap;
  readonly ranges: readonly OutgoingRange[];
  readonly moving: Uint8Array;
  /** Unfinished scan of the table (undefined once every key was seen). */
  scan: Iterator<{ readonly key: string }> | undefined;
  /** Keys of moving slots seen with holders, until they have none. */
  readonly held: Set<string>;
  /** The commit was sent (reset only if it failed). */
  committing: boolean;
}

/**
 * An active's part in slot moves (docs/consistency.md, "Moving slots").
 *
 * As a move's **source**: the gate already refuses acquires and extensions in the moving ranges;
 * this withdraws the acquires queued there (`SLOT_MOVING`, so their clients re-send with the same
 * id and follow the map), waits until every holder there has released or its lease ran out (leases
 * cannot be extended meanwhile, so at most one maximum lease), and then commits the move by a
 * compare-and-set of the map, only while its ownership lease is valid: a new active of the source
 * reads the map after taking the lease, so it sees the move in progress or committed.
 *
 * As a move's **target**: the gate refuses gained slots until an epoch taken from the store's
 * counter after the gain was read is in use. Every epoch the source granted from was taken before
 * its commit, so each key's tokens keep rising across the move (A→B→A too).
 */
export class SlotMoves {
  readonly #options: SlotMovesOptions;
  #drain: Drain | undefined;
  #timer: Timer | undefined;
  #raising = false;
  /** No raise or commit before this time (after a failure). */
  #quietUntil = Number.NEGATIVE_INFINITY;
  #closed = false;
  /** Gained slots waited for an epoch at the last look (to report when they no longer do). */
  #gainsPending = false;

  constructor(options: SlotMovesOptions) {
    this.#options = options;
    options.gate.requireEpochForGains();
    options.gate.onChange(() => this.step());
  }

  /**
   * The move this node drains as its cluster's active, for operators: the ranges, whether the table
   * is still being scanned, and how many keys there still have holders. Undefined when none.
   */
  draining():
    | { ranges: readonly OutgoingRange[]; scanning: boolean; heldKeys: number; committing: boolean }
    | undefined {
    const drain = this.#drain;
    if (drain === undefined) return undefined;
    return {
      ranges: drain.ranges,
      scanning: drain.scan !== undefined,
      heldKeys: drain.held.size,
      committing: drain.committing,
    };
  }

  /** Looks again now: the map or this node's role changed. */
  step(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    if (this.#closed) return;
    const { gate, host } = this.#options;
    // Whichever epoch covered them (a raise here, or the lease's at a promotion): said once.
    const pending = gate.needsEpoch;
    if (this.#gainsPending && !pending) this.#options.events?.gainsServed?.();
    this.#gainsPending = pending;
    if (!host.active()) {
      this.#drain = undefined;
      return;
    }
    if (gate.needsEpoch) this.#raise();
    this.#drainOutgoing();
    if (this.#drain !== undefined || gate.needsEpoch)
      this.#timer = this.#options.timers.after(SLOT_MOVE_POLL_MS, () => this.step());
  }

  close(): void {
    this.#closed = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /** Slots this cluster gained wait for a fresh epoch: take one (or, as the mutation, pretend to). */
  #raise(): void {
    const { gate, host, events } = this.#options;
    const now = this.#options.node.clock.now();
    if (this.#raising || now < this.#quietUntil) return;
    const ticket = gate.epochTicket();
    if (this.#options.skipEpochRaise) {
      gate.epochInUse(ticket);
      return;
    }
    this.#raising = true;
    host.raiseEpoch().then(
      (raised) => {
        this.#raising = false;
        if (!raised) {
          this.#quietUntil = this.#options.node.clock.now() + RETRY_AFTER_FAILURE_MS;
          return;
        }
        gate.epochInUse(ticket);
      },
      (error: unknown) => {
        this.#raising = false;
        this.#quietUntil = this.#options.node.clock.now() + RETRY_AFTER_FAILURE_MS;
        events?.storeFailed?.("take an epoch for gained slots", error);
      },
    );
  }

  #drainOutgoing(): void {
    const { gate } = this.#options;
    const map = gate.map;
    const ranges = gate.outgoing();
    if (map === undefined || ranges.length === 0 || gate.awaitingMap) {
      this.#drain = undefined;
      return;
    }
    if (this.#drain?.map !== map) this.#drain = this.#startDrain(map, ranges);
    const drain = this.#drain;
    if (drain.scan !== undefined && !this.#scan(drain)) return;
    const node = this.#options.node;
    for (const key of drain.held) if (!node.isKeyHeld(key)) drain.held.delete(key);
    if (drain.held.size === 0) this.#commit(drain);
  }

  #startDrain(map: SlotMap, ranges: readonly OutgoingRange[]): Drain {
    const moving = new Uint8Array(KEY_SLOTS);
    for (const { from, to } of ranges) moving.fill(1, from, to + 1);
    return {
      map,
      ranges,
      moving,
      scan: this.#options.node.holders()[Symbol.iterator](),
      held: new Set(),
      committing: false,
    };
  }

  /**
   * One chunk of the scan: each key of a moving slot has its queue withdrawn (no waiter may be
   * granted there any more) and is kept to poll while it has holders. True once the scan is done.
   * The table may change between chunks: a Map's iterator sees every key still there.
   */
  #scan(drain: Drain): boolean {
    const node = this.#options.node;
    let withdrawn = 0;
    for (let seen = 0; seen < SCAN_CHUNK; seen += 1) {
      const next = drain.scan!.next();
      if (next.done) {
        drain.scan = undefined;
        break;
      }
      const { key } = next.value;
      if (drain.moving[keySlot(key)] !== 1 || drain.held.has(key)) continue;
      drain.held.add(key);
      withdrawn += node.withdrawQueue(key, (sink, id) => {
        const slot = keySlot(key);
        const target = drain.map.rangeOf(slot).movingTo;
        sink.refused(key, id, "SLOT_MOVING", `slot ${slot} is moving to ${target}; retry shortly`);
      });
    }
    if (withdrawn > 0) this.#options.events?.withdrawn?.(withdrawn);
    return drain.scan === undefined;
  }

  /** The ranges are drained: write the map with their moves committed, if the map is still `drain.map`. */
  #commit(drain: Drain): void {
    const { host, store, events, node } = this.#options;
    if (drain.committing || !host.mayCommit() || node.clock.now() < this.#quietUntil) return;
    drain.committing = true;
    const { map, ranges } = drain;
    const next = ranges.reduce((m, r) => m.withMoveCommitted(r.from, r.to, map.version + 1n), map);
    store.writeDocument(SLOT_MAP_DOCUMENT, next.toDocument(), map.version).then(
      (version) => {
        // Written, or a miss (the map changed meanwhile: an operator, another node): either way
        // the watch brings the newer map, and with it the next drain. Nothing is written again.
        if (version !== undefined) events?.committed?.(ranges, version);
      },
      (error: unknown) => {
        drain.committing = false;
        this.#quietUntil = node.clock.now() + RETRY_AFTER_FAILURE_MS;
        events?.storeFailed?.("commit a slot move", error);
      },
    );
  }
}
