/**
 * One timer structure for every deadline (lockd's leases and waits, the client's timers): an indexed
 * binary min-heap.
 *
 * Entries carry their own `heapIndex`, so a lease extension or a waiter leaving its queue updates
 * or removes its entry in O(log n) instead of leaving a stale entry behind. That keeps memory
 * bounded by the number of live holders and waiters, whatever a client does (a tight extend loop
 * would otherwise grow a lazy-deletion heap without bound). Ties are broken by `order`, so a lease
 * that expires at the same moment as a wait deadline is processed first, deterministically.
 */
export interface DeadlineEntry {
  deadline: number;
  /** Position in the heap, or -1 when not scheduled. Owned by the heap. */
  heapIndex: number;
  /** Tie-break among equal deadlines: lower first. */
  readonly order: number;
}

export class DeadlineHeap<T extends DeadlineEntry> {
  readonly #items: T[] = [];

  get size(): number {
    return this.#items.length;
  }

  /** The entry with the earliest deadline, without removing it. */
  peek(): T | undefined {
    return this.#items[0];
  }

  /** Schedules `entry` at `deadline`, or moves it there if it is already scheduled. */
  schedule(entry: T, deadline: number): void {
    if (entry.heapIndex >= 0) {
      const earlier = deadline < entry.deadline;
      entry.deadline = deadline;
      if (earlier) this.#up(entry.heapIndex);
      else this.#down(entry.heapIndex);
      return;
    }
    entry.deadline = deadline;
    entry.heapIndex = this.#items.length;
    this.#items.push(entry);
    this.#up(entry.heapIndex);
  }

  /** Unschedules `entry`; a no-op if it is not scheduled. */
  remove(entry: T): void {
    const index = entry.heapIndex;
    if (index < 0) return;
    entry.heapIndex = -1;
    const last = this.#items.pop()!;
    if (index === this.#items.length) return;
    this.#items[index] = last;
    last.heapIndex = index;
    this.#down(index);
    this.#up(last.heapIndex);
  }

  /** Unschedules every entry. */
  clear(): void {
    for (const entry of this.#items) entry.heapIndex = -1;
    this.#items.length = 0;
  }

  /** Removes and returns the earliest entry if its deadline is at or before `now`. */
  popDue(now: number): T | undefined {
    const first = this.#items[0];
    if (first === undefined || first.deadline > now) return undefined;
    this.remove(first);
    return first;
  }

  #before(a: T, b: T): boolean {
    return a.deadline < b.deadline || (a.deadline === b.deadline && a.order < b.order);
  }

  #up(index: number): void {
    const items = this.#items;
    const entry = items[index]!;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = items[parentIndex]!;
      if (!this.#before(entry, parent)) break;
      items[index] = parent;
      parent.heapIndex = index;
      index = parentIndex;
    }
    items[index] = entry;
    entry.heapIndex = index;
  }

  #down(index: number): void {
    const items = this.#items;
    const length = items.length;
    const entry = items[index]!;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      let child = left;
      if (right < length && this.#before(items[right]!, items[left]!)) child = right;
      const candidate = items[child]!;
      if (!this.#before(candidate, entry)) break;
      items[index] = candidate;
      candidate.heapIndex = index;
      index = child;
    }
    items[index] = entry;
    entry.heapIndex = index;
  }
}
