import { type DeadlineEntry, DeadlineHeap, ManualClock } from "@lock/deadline-heap";

class Event implements DeadlineEntry {
  deadline = 0;
  heapIndex = -1;
  constructor(
    readonly order: number,
    readonly run: () => void,
  ) {}
}

/** A manual clock for the simulation, and the events due on it, ties in scheduling order. */
export class Scheduler {
  readonly clock = new ManualClock(0);
  readonly #events = new DeadlineHeap<Event>();
  #order = 0;

  get now(): number {
    return this.clock.now();
  }

  at(atMs: number, run: () => void): void {
    this.#events.schedule(new Event(this.#order++, run), Math.max(atMs, this.now));
  }

  after(delayMs: number, run: () => void): void {
    this.at(this.now + delayMs, run);
  }

  get nextAt(): number | undefined {
    return this.#events.peek()?.deadline;
  }

  /** Runs the earliest event if it is due by `upTo` (moving the clock to it); false if none is. */
  runNext(upTo: number): boolean {
    const next = this.#events.peek();
    if (next === undefined || next.deadline > upTo) return false;
    this.#events.remove(next);
    this.clock.set(next.deadline);
    next.run();
    return true;
  }
}
