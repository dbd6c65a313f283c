import type { Timer, TimerQueue } from "@lock/deadline-heap";
import type { ReceivedHolder, SnapshotHolders } from "./peer/snapshot-holders.js";

/** How a standby spreads a snapshot's load over its event loop's turns. */
export interface LoadPacing {
  /** Keys cleared, holders installed or changes applied per turn at most… */
  readonly perTurn: number;
  /** …and a turn ends sooner once it has taken this long, so heartbeats and peers keep being served. */
  readonly turnMs: number;
  /**
   * The wait between two turns: 0, the next event-loop turn. The simulator waits longer, so that a
   * load spans simulated time and its peers' frames, faults and promotions happen in the middle of it.
   */
  readonly pauseMs: number;
}

/**
 * 8192 holders per turn, as a promotion schedules its deadlines (node.ts), and at most 4 ms, as the
 * active sends them (replicator.ts). In one go, a standby loading 5M holders did not run its event
 * loop for 7–36 s: it missed heartbeats and answered no peer (issue 20).
 */
export const DEFAULT_LOAD_PACING: LoadPacing = { perTurn: 8192, turnMs: 4, pauseMs: 0 };

/** What a load does to the table, a unit at a time (Replica). `lateMs`: how long ago it would have been done at once. */
export interface LoadTarget<C> {
  /** Forgets up to `count` keys of the table it replaces; false once it is empty. */
  clearSome(count: number): boolean;
  install(holder: ReceivedHolder, lateMs: number): void;
  apply(change: C, lateMs: number): void;
}

/** Units done between two looks at the clock. */
const CLOCK_EVERY = 256;

/**
 * A snapshot being loaded into the table, a slice per event-loop turn on the node's timer queue:
 * first the table it replaces is cleared, then the snapshot's holders are installed, then the
 * changes of its stream that arrived meanwhile (`queue`) are applied, in the order they came, so
 * none is lost or applied before the holders it follows. `done` is called once all of that is in
 * the table (from the turn that did the last of it); `cancel` stops it wherever it is (the table is
 * then partly cleared or partly loaded, and the next load clears it). Holders are let go of as they
 * are installed, so the snapshot and the table it fills are not both whole in memory.
 */
export class SnapshotLoad<C> {
  readonly #target: LoadTarget<C>;
  readonly #timers: TimerQueue;
  readonly #pacing: LoadPacing;
  readonly #done: () => void;
  /** When the snapshot was complete: its leases were measured then. */
  readonly #completeAt: number;
  #clearing = true;
  #holders: SnapshotHolders | undefined;
  #nextHolder = 0;
  #queued: Array<{ readonly change: C; readonly at: number }> = [];
  #nextQueued = 0;
  #timer: Timer | undefined;

  /** Starts at the next turn. `holders` are the load's from now on: it takes them as it goes. */
  constructor(
    target: LoadTarget<C>,
    holders: SnapshotHolders,
    timers: TimerQueue,
    pacing: LoadPacing,
    done: () => void,
  ) {
    this.#target = target;
    this.#holders = holders;
    this.#timers = timers;
    this.#pacing = pacing;
    this.#done = done;
    this.#completeAt = timers.clock.now();
    this.#timer = timers.after(pacing.pauseMs, this.#turn);
  }

  /** A change of the snapshot's stream, applied after every holder and every change queued before it. */
  queue(change: C): void {
    this.#queued.push({ change, at: this.#timers.clock.now() });
  }

  cancel(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#holders = undefined;
    this.#queued = [];
  }

  readonly #turn = (): void => {
    this.#timer = undefined;
    const clock = this.#timers.clock;
    const endsAt = clock.now() + this.#pacing.turnMs;
    for (let left = this.#pacing.perTurn; left > 0; left -= CLOCK_EVERY) {
      if (!this.#work(Math.min(left, CLOCK_EVERY))) {
        this.#done();
        return;
      }
      if (clock.now() >= endsAt) break;
    }
    this.#timer = this.#timers.after(this.#pacing.pauseMs, this.#turn);
  };

  /** Up to `count` units of what is left; false once nothing is left after them. */
  #work(count: number): boolean {
    if (this.#clearing) {
      this.#clearing = this.#target.clearSome(count);
      return true;
    }
    const now = this.#timers.clock.now();
    const holders = this.#holders;
    if (holders !== undefined) {
      const end = Math.min(holders.length, this.#nextHolder + count);
      for (let i = this.#nextHolder; i < end; i++)
        this.#target.install(holders.take(i), now - this.#completeAt);
      this.#nextHolder = end;
      if (end < holders.length) return true;
      this.#holders = undefined;
    } else {
      const queued = this.#queued;
      const end = Math.min(queued.length, this.#nextQueued + count);
      for (let i = this.#nextQueued; i < end; i++) this.#target.apply(queued[i]!.change, now - queued[i]!.at);
      this.#nextQueued = end;
    }
    return this.#nextQueued < this.#queued.length;
  }
}
