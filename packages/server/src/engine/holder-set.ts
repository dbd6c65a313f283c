import type { Holder } from "./records.js";

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
