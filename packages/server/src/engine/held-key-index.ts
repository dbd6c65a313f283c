import { SortedKeys } from "./sorted-keys.js";

/** Logged keys applied at once past this many: bounds the log's memory while a listing is idle. */
const FLUSH_AT = 4096;

/**
 * The held keys in order, for `/locks`, kept lazily so that the grant/release hot path pays
 * (almost) nothing for it:
 *
 * - Nothing exists until the first listing asks (`ready`). Until then the engine's only cost is an
 *   `undefined` check per new or freed key.
 * - The first listing builds it in steps (`build(budget)`) from the live key map, so building on a
 *   million keys never blocks the event loop for long (a long block would look like a stall to the
 *   cluster and delay lease expiry).
 * - From then on the engine reports each key that appeared or left (`added`/`removed`) into a map
 *   of pending changes, applied when a listing reads or past `FLUSH_AT` keys. A key granted and
 *   freed between two reads cancels out in that map: the sorted set, whose compares are the
 *   expensive part, only sees keys that stayed.
 *
 * During the build the map only records which keys changed, and applying asks the key map whether
 * each is held *now* (idempotent, order-free): the key map's iterator may or may not have visited
 * a changed key, so nothing can cancel out. Correct because that iterator (see KeyTable) visits
 * every key held for the whole build exactly once and never yields a key that is not held: a key
 * that changed during the build is settled by its last change's entry here, whenever it is applied.
 */
export class HeldKeyIndex {
  readonly #keys = new SortedKeys();
  readonly #isHeld: (key: string) => boolean;
  /** Key -> held, relative to `#keys` (once built: `#keys` plus these is the key map). */
  #pending = new Map<string, boolean>();
  #building: Iterator<string> | undefined;

  constructor(heldKeys: Iterable<string>, isHeld: (key: string) => boolean) {
    this.#isHeld = isHeld;
    this.#building = heldKeys[Symbol.iterator]();
  }

  /** `key` entered the key map. Hot path: a map operation, a flush every `FLUSH_AT` keys. */
  added(key: string): void {
    // Built: a removal still pending means the key is in the sorted set; back again, no change.
    if (this.#building === undefined && this.#pending.get(key) === false) this.#pending.delete(key);
    else this.#pend(key, true);
  }

  /** `key` left the key map. */
  removed(key: string): void {
    // Built: an insert still pending means the key never reached the sorted set.
    if (this.#building === undefined && this.#pending.get(key) === true) this.#pending.delete(key);
    else this.#pend(key, false);
  }

  /** Every key left the key map. */
  cleared(): void {
    this.#keys.clear();
    this.#pending = new Map();
    this.#building = undefined;
  }

  get ready(): boolean {
    return this.#building === undefined;
  }

  /** Adds up to `budget` keys of the initial build; true once the index is complete. */
  build(budget: number): boolean {
    const building = this.#building;
    if (building === undefined) return true;
    for (let i = 0; i < budget; i++) {
      const next = building.next();
      if (next.done) {
        // From here on `#keys` plus `#pending` must be the key map: apply what changed meanwhile.
        this.#flush();
        this.#building = undefined;
        return true;
      }
      this.#keys.add(next.value);
    }
    return false;
  }

  /** Held keys from `from` on (after it when `exclusive`), ascending; the index must be `ready`. */
  from(from: string, exclusive: boolean): Iterable<string> {
    if (!this.ready) throw new Error("the held-key index is still being built");
    this.#flush();
    return this.#keys.from(from, exclusive);
  }

  #pend(key: string, held: boolean): void {
    this.#pending.set(key, held);
    if (this.#pending.size >= FLUSH_AT) this.#flush();
  }

  #flush(): void {
    const pending = this.#pending;
    if (pending.size === 0) return;
    this.#pending = new Map();
    // Asking the key map (not the recorded value) keeps this right during the build as well.
    for (const key of pending.keys()) {
      if (this.#isHeld(key)) this.#keys.add(key);
      else this.#keys.delete(key);
    }
  }
}
