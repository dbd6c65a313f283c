import type { DeadlineEntry } from "@lock/deadline-heap";
import type { HoldingKind, LockMode } from "./lock-mode.js";

/**
 * The engine's per-key and per-waiter records. They are plain mutable classes (not immutable
 * values) because memory per held lock is a product target: one object per held key, one per
 * queued waiter, and intrusive linked lists instead of side arrays or sets.
 */

/** Scheduling tie-break: at the same instant a lease expiry is handled before a wait timeout. */
const LEASE_ORDER = 0;
const WAIT_ORDER = 1;

/**
 * `grantLead` of a holder this engine did not grant (replicated), or of any holder while no meter
 * is set.
 */
export const NOT_GRANTED_HERE = -1;

/** `grantLead` of a metered holder between its grant and the scheduling of its lease. */
export const LEAD_PENDING = -2;

/** The largest `grantLead` (about 12 days): a small integer on every V8, never a boxed number. */
export const MAX_GRANT_LEAD = 2 ** 30 - 1;

/**
 * A grant's `grantLead` for a lease of `ms` (or a lead moved by `ms`): whole ms, capped. A hold
 * longer than the cap counts in the histogram's +Inf bucket all the same (it is past 10 min), with
 * the cap in its sum.
 */
export function grantLead(ms: number): number {
  return ms < MAX_GRANT_LEAD ? Math.round(ms) : MAX_GRANT_LEAD;
}

/** `KeyState.token` while the key has no exclusive holder (its holders are in a `HolderSet`). */
export const NO_TOKEN = 0n;

/**
 * A held key and, when it is held exclusively, its holder and lease entry: a lock's only holder
 * lives in the key's own record, so an exclusive lock costs no more memory than before shared
 * holders and permits existed. Shared holders and permits are `Holder`s in the key's `HolderSet`
 * (then `token` is `NO_TOKEN`). Exists only while held: the engine grants a waiter whenever it can,
 * so a key never has waiters and no holder.
 */
export class KeyState<P> implements DeadlineEntry {
  deadline = 0;
  heapIndex = -1;
  /** Allocated only while someone waits or the key has shared holders or permits (see KeyExtra). */
  more: KeyExtra<P> | undefined = undefined;
  /**
   * For hold-time metrics (set only with an EngineMeter): how long before `deadline` the exclusive
   * holder was granted, whole ms (moved by each extension). The grant time is `deadline − grantLead`:
   * a small integer beside the deadline the record has anyway costs no number box per held lock.
   */
  grantLead = NOT_GRANTED_HERE;
  /** What the EngineMeter's `held` returned for the exclusive holder, handed back to `freed`. */
  meterSlot = 0;

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
    return this.more?.head;
  }

  get waiterCount(): number {
    return this.more?.count ?? 0;
  }

  /** The shared holders or permits, if the key is held that way. */
  get holders(): HolderSet<P> | undefined {
    return this.more?.holders;
  }

  get holding(): HoldingKind {
    if (this.token !== NO_TOKEN) return "exclusive";
    const holders = this.more?.holders;
    return holders === undefined ? "none" : holders.kind;
  }

  get holderCount(): number {
    return this.token !== NO_TOKEN ? 1 : (this.more?.holders?.count ?? 0);
  }

  /** The limit if the key is a semaphore (held or queued for), else undefined (a lock). */
  get semaphoreLimit(): number | undefined {
    const holders = this.more?.holders;
    return holders?.kind === "permit" ? holders.limit : undefined;
  }

  findWaiter(id: string): Waiter<P> | undefined {
    return this.more?.byId?.get(id);
  }

  enqueue(waiter: Waiter<P>): void {
    this.more ??= new KeyExtra<P>();
    this.more.push(waiter);
  }

  unlink(waiter: Waiter<P>): void {
    this.more!.remove(waiter);
    dropExtraIfEmpty(this);
  }

  /** Starts holding the key through a `HolderSet` (a first shared holder or permit). */
  startHolderSet(kind: "shared" | "permit", limit: number): HolderSet<P> {
    this.more ??= new KeyExtra<P>();
    const holders = new HolderSet<P>(kind, limit);
    this.more.holders = holders;
    return holders;
  }

  /** The `HolderSet` emptied: the key is held no more (until its next grant). */
  endHolderSet(): void {
    this.more!.holders = undefined;
    dropExtraIfEmpty(this);
  }
}

/**
 * A module function, not a `#private` method of KeyState: a class with private methods gives each
 * instance a hidden brand slot, 8 bytes per held lock.
 */
function dropExtraIfEmpty<P>(state: KeyState<P>): void {
  const more = state.more!;
  if (more.count === 0 && more.holders === undefined) state.more = undefined;
}

/**
 * What most held keys never need, in one object: the FIFO queue of waiters (an intrusive doubly
 * linked list, plus an index by request id) and the shared holders or permits.
 */
class KeyExtra<P> {
  head: Waiter<P> | undefined = undefined;
  tail: Waiter<P> | undefined = undefined;
  count = 0;
  /** Created on the first waiter that carries an id. */
  byId: Map<string, Waiter<P>> | undefined = undefined;
  holders: HolderSet<P> | undefined = undefined;

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

/** A shared holder or a permit: its own token, lease entry, id and session (and slot, for a permit). */
export class Holder<P> implements DeadlineEntry {
  deadline = 0;
  heapIndex = -1;
  /** As `KeyState.grantLead`. */
  grantLead = NOT_GRANTED_HERE;
  /** As `KeyState.meterSlot`. */
  meterSlot = 0;

  constructor(
    readonly state: KeyState<P>,
    readonly token: bigint,
    public holderId: string | undefined,
    public holderSession: Session<P> | undefined,
    /** The permit's slot, 0..limit−1; -1 for a shared holder. */
    readonly slot: number,
  ) {}

  get order(): number {
    return LEASE_ORDER;
  }
}

/** A key's exclusive holder (the key's own record) or one of its shared holders or permits. */
export type HeldRecord<P> = KeyState<P> | Holder<P>;

/** A permit's slot; undefined for an exclusive or shared holder. */
export function slotOf<P>(held: HeldRecord<P>): number | undefined {
  return held instanceof Holder && held.slot >= 0 ? held.slot : undefined;
}

/** Oldest grant first: tokens only increase. */
export function byToken(a: { readonly token: bigint }, b: { readonly token: bigint }): number {
  return a.token < b.token ? -1 : a.token > b.token ? 1 : 0;
}

/** A queued acquire. Belongs to one key's queue and one session's list at a time. */
export class Waiter<P> implements DeadlineEntry {
  deadline = Number.POSITIVE_INFINITY;
  heapIndex = -1;
  prev: Waiter<P> | undefined = undefined;
  next: Waiter<P> | undefined = undefined;
  sessionPrev: Waiter<P> | undefined = undefined;
  sessionNext: Waiter<P> | undefined = undefined;
  /** The bundle this waiter is one key of (bundle.ts); undefined for a single-key acquire. */
  bundle: QueuedBundle<P> | undefined = undefined;

  constructor(
    readonly state: KeyState<P>,
    public session: Session<P>,
    public payload: P,
    public leaseMs: number,
    readonly id: string | undefined,
    readonly mode: LockMode,
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
  /**
   * Grants whose `holderSession` is this session (exclusive holders, shared holders, permits), kept
   * exact by the engine at every grant, hand-off, retry, release and expiry: lockd's per-connection
   * key quota reads it instead of keeping its own set of the connection's keys (which cost about
   * 40 bytes per held lock).
   */
  heldCount = 0;

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

/**
 * A key's shared holders, or a semaphore's permits: found by token (release, extend, ownership)
 * and by request id (a retried acquire gets its grant back), and, for permits, which slots are
 * taken, so that each new permit takes the lowest free one.
 */
export class HolderSet<P> {
  readonly #byToken = new Map<bigint, Holder<P>>();
  /** Created on the first holder that carries an id. */
  #byId: Map<string, Holder<P>> | undefined = undefined;
  /** Permits only: bit `s` is set while slot `s` is taken. */
  readonly #slots: Uint32Array | undefined;

  /** `limit`: the semaphore's permits; for shared holders, 0 (the engine caps them). */
  constructor(
    readonly kind: "shared" | "permit",
    readonly limit: number,
  ) {
    if (kind === "permit") this.#slots = new Uint32Array(Math.ceil(limit / 32));
  }

  get count(): number {
    return this.#byToken.size;
  }

  get(token: bigint): Holder<P> | undefined {
    return this.#byToken.get(token);
  }

  findById(id: string): Holder<P> | undefined {
    return this.#byId?.get(id);
  }

  values(): IterableIterator<Holder<P>> {
    return this.#byToken.values();
  }

  add(holder: Holder<P>): void {
    this.#byToken.set(holder.token, holder);
    if (holder.holderId !== undefined) {
      this.#byId ??= new Map();
      this.#byId.set(holder.holderId, holder);
    }
    if (this.#slots !== undefined) this.#slots[holder.slot >>> 5]! |= 1 << (holder.slot & 31);
  }

  remove(holder: Holder<P>): void {
    this.#byToken.delete(holder.token);
    if (holder.holderId !== undefined) this.#byId?.delete(holder.holderId);
    if (this.#slots !== undefined) this.#slots[holder.slot >>> 5]! &= ~(1 << (holder.slot & 31));
  }

  /** The lowest free slot of a semaphore (call only while `count < limit`); -1 for shared holders. */
  freeSlot(): number {
    const slots = this.#slots;
    if (slots === undefined) return -1;
    for (let word = 0; word < slots.length; word += 1) {
      const taken = slots[word]!;
      if (taken !== 0xffffffff) return word * 32 + lowestZeroBit(taken);
    }
    throw new Error("freeSlot on a full semaphore");
  }

  /** Whether `slot` is taken (a replicated permit must land on a free one). */
  slotTaken(slot: number): boolean {
    return this.#slots !== undefined && (this.#slots[slot >>> 5]! & (1 << (slot & 31))) !== 0;
  }
}

/** The index of the lowest 0 bit of a 32-bit word that has one. */
function lowestZeroBit(word: number): number {
  const lowestZero = ~word & (word + 1);
  return 31 - Math.clz32(lowestZero);
}

/** A bundle waiting in its keys' queues (one waiter per key, in key order). */
export class QueuedBundle<P> {
  readonly waiters: Array<Waiter<P>> = [];

  constructor(
    readonly keys: readonly string[],
    readonly id: string,
  ) {}

  get first(): Waiter<P> {
    return this.waiters[0]!;
  }

  /** Whether it heads every one of its keys' queues and none of them has a holder. */
  grantable(): boolean {
    for (const waiter of this.waiters)
      if (waiter.state.head !== waiter || waiter.state.holderCount !== 0) return false;
    return true;
  }

  /** A retry of the same bundle (same id) takes the waiters over: their places, a new connection. */
  rebind(session: Session<P>, payload: P, leaseMs: number): P {
    const displaced = this.first.payload;
    for (const waiter of this.waiters) {
      waiter.session.remove(waiter);
      waiter.session = session;
      session.add(waiter);
      waiter.payload = payload;
      waiter.leaseMs = leaseMs;
    }
    return displaced;
  }
}
