/** The link fields a LinkedSet member carries, under symbols so they stay out of public APIs. */
export const PREV: unique symbol = Symbol("LinkedSet.prev");
export const NEXT: unique symbol = Symbol("LinkedSet.next");
export const OWNER: unique symbol = Symbol("LinkedSet.owner");

export interface Linked {
  [PREV]: Linked | undefined;
  [NEXT]: Linked | undefined;
  [OWNER]: LinkedSet<Linked> | undefined;
}

/**
 * An intrusive set: the members carry their own links, so adding and removing allocate nothing.
 * A client adds and removes an entry per acquire, lock and release; a `Set` doing that at 100k/s
 * rehashes its table every few thousand operations, which showed up as a large share of GC time.
 * A member belongs to at most one LinkedSet at a time.
 */
export class LinkedSet<T extends Linked> {
  #head: T | undefined;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  add(item: T): void {
    if (item[OWNER] !== undefined) return;
    item[OWNER] = this as unknown as LinkedSet<Linked>;
    item[PREV] = undefined;
    item[NEXT] = this.#head;
    if (this.#head !== undefined) this.#head[PREV] = item;
    this.#head = item;
    this.#size += 1;
  }

  /** Removes `item`; false if it was not a member. */
  delete(item: T): boolean {
    if (item[OWNER] !== (this as unknown as LinkedSet<Linked>)) return false;
    const prev = item[PREV] as T | undefined;
    const next = item[NEXT] as T | undefined;
    if (prev === undefined) this.#head = next;
    else prev[NEXT] = next;
    if (next !== undefined) next[PREV] = prev;
    item[PREV] = undefined;
    item[NEXT] = undefined;
    item[OWNER] = undefined;
    this.#size -= 1;
    return true;
  }

  /** The members, most recently added first, as a copy: the caller may remove while iterating. */
  toArray(): T[] {
    const items: T[] = [];
    for (let item = this.#head; item !== undefined; item = item[NEXT] as T | undefined) items.push(item);
    return items;
  }
}
