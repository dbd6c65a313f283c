import { type Clock, type DeadlineEntry, DeadlineHeap, monotonicClock } from "@lock/deadline-heap";

/** A pending callback; `cancel()` is idempotent and safe after it ran. */
export interface Timer {
  cancel(): void;
}

/**
 * Every deadline of a client (reconnects, keepalives, retry backoffs, lease renewals and expiries)
 * in one min-heap behind one host timer, so a client holding 100k locks arms one `setTimeout`,
 * not 100k.
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

  constructor(clock: Clock = monotonicClock) {
    this.clock = clock;
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
    for (let due = this.#heap.popDue(now); due !== undefined; due = this.#heap.popDue(now)) {
      try {
        due.callback();
      } catch (error) {
        // Surface it as an uncaught exception, as a plain setTimeout would, without losing the rest.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
    if (!this.#stopped && this.#heap.size > 0) this.#arm();
  };

  #arm(): void {
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
