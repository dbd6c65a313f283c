import type { DeadlineEntry } from "@lock/deadline-heap";

/**
 * The engine's per-key and per-waiter records. They are plain mutable classes (not immutable
 * values) because memory per held lock is a product target: one object per held key, one per
 * queued waiter, and intrusive linked lists instead of side arrays or sets.
 */

/** Scheduling tie-break: at the same instant a lease expiry is handled before a wait timeout. */
const LEASE_ORDER = 0;
const WAIT_ORDER = 1;

/** A held key: its holder, lease deadline and FIFO queue of waiters. Exists only while held. */
export class KeyState<P> implements DeadlineEntry {
  deadline = 0;
  heapIndex = -1;
  /** Allocated only while someone waits: most held keys never have a queue. */
  queue: WaitQueue<P> | undefined = undefined;

  /**
   * `holderSession`: the connection that was granted the key, which may release and extend it
   * without presenting the request id (undefined for a replicated holder: only the id proves it).
   */
  constructor(
    readonly key: string,
    public token: bigint,
    public holderId: string | undefined,
    public holderSession: Session<P> | undefined,
  ) {}

  // A prototype getter, not a field: no per-lock memory for a constant.
  get order(): number {
    return LEASE_ORDER;
  }

  get head(): Waiter<P> | undefined {
    return this.queue?.head;
  }

  get waiterCount(): number {
    return this.queue?.count ?? 0;
  }

  findWaiter(id: string): Waiter<P> | undefined {
    return this.queue?.byId?.get(id);
  }

  enqueue(waiter: Waiter<P>): void {
    this.queue ??= new WaitQueue<P>();
    this.queue.push(waiter);
  }

  unlink(waiter: Waiter<P>): void {
    const queue = this.queue!;
    queue.remove(waiter);
    if (queue.count === 0) this.queue = undefined;
  }
}

/** A key's waiters in arrival order: an intrusive doubly linked list, plus an index by request id. */
class WaitQueue<P> {
  head: Waiter<P> | undefined = undefined;
  tail: Waiter<P> | undefined = undefined;
  count = 0;
  /** Created on the first waiter that carries an id. */
  byId: Map<string, Waiter<P>> | undefined = undefined;

  push(waiter: Waiter<P>): void {
    waiter.prev = this.tail;
    waiter.next = undefined;
    if (this.tail) this.tail.next = waiter;
    else this.head = waiter;
    this.tail = waiter;
    this.count += 1;
    if (waiter.id !== undefined) {
      this.byId ??= new Map();
      this.byId.set(waiter.id, waiter);
    }
  }

  remove(waiter: Waiter<P>): void {
    if (waiter.prev) waiter.prev.next = waiter.next;
    else this.head = waiter.next;
    if (waiter.next) waiter.next.prev = waiter.prev;
    else this.tail = waiter.prev;
    waiter.prev = waiter.next = undefined;
    this.count -= 1;
    if (waiter.id !== undefined) this.byId?.delete(waiter.id);
  }
}

/** A queued acquire. Belongs to one key's queue and one session's list at a time. */
export class Waiter<P> implements DeadlineEntry {
  deadline = Number.POSITIVE_INFINITY;
  heapIndex = -1;
  prev: Waiter<P> | undefined = undefined;
  next: Waiter<P> | undefined = undefined;
  sessionPrev: Waiter<P> | undefined = undefined;
  sessionNext: Waiter<P> | undefined = undefined;

  constructor(
    readonly state: KeyState<P>,
    public session: Session<P>,
    public payload: P,
    public leaseMs: number,
    readonly id: string | undefined,
    /** Clock time the acquire was queued, for the wait-time metric. */
    public queuedAt: number,
  ) {}

  get order(): number {
    return WAIT_ORDER;
  }
}

/**
 * A client connection as the engine sees it: the waiters to drop when it closes. Held locks are
 * not tied to a session (a client may release over another connection); leases cover dead holders.
 */
export class Session<P> {
  head: Waiter<P> | undefined = undefined;
  waiterCount = 0;

  /** `label`: who the session is, for listings (lockd: the client's remote address). */
  constructor(readonly label?: string) {}

  add(waiter: Waiter<P>): void {
    waiter.sessionPrev = undefined;
    waiter.sessionNext = this.head;
    if (this.head) this.head.sessionPrev = waiter;
    this.head = waiter;
    this.waiterCount += 1;
  }

  remove(waiter: Waiter<P>): void {
    if (waiter.sessionPrev) waiter.sessionPrev.sessionNext = waiter.sessionNext;
    else this.head = waiter.sessionNext;
    if (waiter.sessionNext) waiter.sessionNext.sessionPrev = waiter.sessionPrev;
    waiter.sessionPrev = waiter.sessionNext = undefined;
    this.waiterCount -= 1;
  }
}
