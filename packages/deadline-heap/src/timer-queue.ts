import { type Clock, monotonicClock } from "./clock.js";
import { type DeadlineEntry, DeadlineHeap } from "./heap.js";

/** A pending callback; `cancel()` is idempotent and safe after it ran. */
export interface Timer {
  cancel(): void;
}

/** How a TimerQueue is woken: a real `setTimeout`, or a driver that calls `runDue()` itself. */
export type TimerHost = "timeout" | "manual";

export interface TimerQueueOptions {
  /**
   * "timeout" (default): one real `setTimeout` armed for the earliest deadline. "manual": nothing
   * is armed; whoever drives the clock calls `runDue()` (tests, the cluster simulator).
   */
  readonly host?: TimerHost;
}

/**
 * Every deadline of a process part (the client's reconnects, keepalives, retry backoffs, lease
 * renewals; lockd's heartbeats, replication timers, epoch holds) in one min-heap behind one host
 * timer, so a client holding 100k locks arms one `setTimeout`, not 100k. Injected wherever a timer
 * is needed, so tests and the simulator run the same code on a manual clock.
 *
 * Ordering: callbacks run in deadline order, ties in scheduling order, each to completion; one may
 * schedule or cancel others, including ones due in the same pass. A callback scheduled for a time
 * already past runs on the next pass, never synchronously inside `at()`.
 */
export class TimerQueue {
  readonly clock: Clock;
  readonly #heap = new DeadlineHeap<Entry>();
  #sequence = 0;
  #host: ReturnType<typeof setTimeout> | undefined;
  #armedFor = Number.POSITIVE_INFINITY;
  #stopped = false;
  readonly #manual: boolean;

  constructor(clock: Clock = monotonicClock, options: TimerQueueOptions = {}) {
    this.clock = clock;
    this.#manual = options.host === "manual";
  }

  /** The earliest pending deadline, if any (a manual driver advances its clock to it). */
  get nextDeadline(): number | undefined {
    return this.#heap.peek()?.deadline;
  }

  /** Runs every callback due by the clock now (what the host timer does when it fires). */
  runDue(): void {
    this.#fire();
  }

  /** Runs `callback` at monotonic time `atMs`. */
  at(atMs: number, callback: () => void): Timer {
    const entry = new Entry(this, this.#sequence++, callback);
    if (this.#stopped) return entry;
    this.#heap.schedule(entry, atMs);
    if (atMs < this.#armedFor) this.#arm();
    return entry;
  }

  after(delayMs: number, callback: () => void): Timer {
    return this.at(this.clock.now() + delayMs, callback);
  }

  get size(): number {
    return this.#heap.size;
  }

  /** Drops every pending callback and the host timer; later `at()` calls are ignored. */
  stop(): void {
    this.#stopped = true;
    this.#heap.clear();
    this.#disarm();
  }

  /** @internal */
  remove(entry: Entry): void {
    this.#heap.remove(entry);
    // The host timer stays armed: when it fires early it finds nothing due and re-arms. Re-arming
    // on every cancel would cost a clearTimeout per released lock.
  }

  readonly #fire = (): void => {
    this.#host = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    let failure: { error: unknown } | undefined;
    for (let due = this.#heap.popDue(now); due !== undefined; due = this.#heap.popDue(now)) {
      try {
        due.callback();
      } catch (error) {
        // Surface it as an uncaught exception, as a plain setTimeout would, without losing the rest;
        // a manual driver (a test, the simulator) gets it thrown from `runDue()` once the rest ran.
        if (this.#manual) failure ??= { error };
        else
          queueMicrotask(() => {
            throw error;
          });
      }
    }
    if (!this.#stopped && this.#heap.size > 0) this.#arm();
    if (failure) throw failure.error;
  };

  #arm(): void {
    if (this.#manual) return;
    const head = this.#heap.peek();
    if (head === undefined) return;
    this.#disarm();
    this.#armedFor = head.deadline;
    // If the host timer fires a fraction of a millisecond early by this clock, #fire finds nothing
    // due and arms again.
    this.#host = setTimeout(this.#fire, Math.max(0, Math.ceil(head.deadline - this.clock.now())));
  }

  #disarm(): void {
    if (this.#host !== undefined) clearTimeout(this.#host);
    this.#host = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
  }
}

/** A scheduled callback: its deadline and heap position are the heap's; ties run in scheduling order. */
class Entry implements Timer, DeadlineEntry {
  deadline = Number.NaN;
  heapIndex = -1;

  constructor(
    readonly queue: TimerQueue,
    readonly order: number,
    readonly callback: () => void,
  ) {}

  cancel(): void {
    this.queue.remove(this);
  }
}
