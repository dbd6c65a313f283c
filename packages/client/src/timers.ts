/** Monotonic milliseconds. Wall-clock time would jump with NTP and break lease arithmetic. */
export interface Clock {
  now(): number;
}

export const monotonicClock: Clock = { now: () => performance.now() };

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
  readonly #heap: Entry[] = [];
  #sequence = 0;
  #host: ReturnType<typeof setTimeout> | undefined;
  #armedFor = Number.POSITIVE_INFINITY;
  #stopped = false;

  constructor(clock: Clock = monotonicClock) {
    this.clock = clock;
  }

  /** Runs `callback` at monotonic time `atMs`. */
  at(atMs: number, callback: () => void): Timer {
    const entry = new Entry(this, atMs, this.#sequence++, callback);
    if (this.#stopped) return entry;
    this.#heap.push(entry);
    this.#up(this.#heap.length - 1);
    if (atMs < this.#armedFor) this.#arm();
    return entry;
  }

  after(delayMs: number, callback: () => void): Timer {
    return this.at(this.clock.now() + delayMs, callback);
  }

  get size(): number {
    return this.#heap.length;
  }

  /** Drops every pending callback and the host timer; later `at()` calls are ignored. */
  stop(): void {
    this.#stopped = true;
    for (const entry of this.#heap) entry.index = -1;
    this.#heap.length = 0;
    this.#disarm();
  }

  /** @internal */
  remove(entry: Entry): void {
    const index = entry.index;
    if (index < 0) return;
    entry.index = -1;
    const last = this.#heap.pop()!;
    if (last !== entry) {
      this.#heap[index] = last;
      last.index = index;
      this.#down(index);
      this.#up(last.index);
    }
    // The host timer stays armed: when it fires early it finds nothing due and re-arms. Re-arming
    // on every cancel would cost a clearTimeout per released lock.
  }

  readonly #fire = (): void => {
    this.#host = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    for (let head = this.#heap[0]; head !== undefined && head.atMs <= now; head = this.#heap[0]) {
      this.remove(head);
      try {
        head.callback();
      } catch (error) {
        // Surface it as an uncaught exception, as a plain setTimeout would, without losing the rest.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
    if (!this.#stopped && this.#heap.length > 0) this.#arm();
  };

  #arm(): void {
    const head = this.#heap[0];
    if (head === undefined) return;
    this.#disarm();
    this.#armedFor = head.atMs;
    // If the host timer fires a fraction of a millisecond early by this clock, #fire finds nothing
    // due and arms again.
    this.#host = setTimeout(this.#fire, Math.max(0, Math.ceil(head.atMs - this.clock.now())));
  }

  #disarm(): void {
    if (this.#host !== undefined) clearTimeout(this.#host);
    this.#host = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
  }

  #up(index: number): void {
    const heap = this.#heap;
    const entry = heap[index]!;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = heap[parentIndex]!;
      if (!entry.before(parent)) break;
      heap[index] = parent;
      parent.index = index;
      index = parentIndex;
    }
    heap[index] = entry;
    entry.index = index;
  }

  #down(index: number): void {
    const heap = this.#heap;
    const entry = heap[index]!;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && heap[right]!.before(heap[left]!) ? right : left;
      const smaller = heap[child]!;
      if (!smaller.before(entry)) break;
      heap[index] = smaller;
      smaller.index = index;
      index = child;
    }
    heap[index] = entry;
    entry.index = index;
  }
}

class Entry implements Timer {
  index = -1;

  constructor(
    readonly queue: TimerQueue,
    readonly atMs: number,
    readonly sequence: number,
    readonly callback: () => void,
  ) {}

  before(other: Entry): boolean {
    return this.atMs < other.atMs || (this.atMs === other.atMs && this.sequence < other.sequence);
  }

  cancel(): void {
    this.queue.remove(this);
  }
}
