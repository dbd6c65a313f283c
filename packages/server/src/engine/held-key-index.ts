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
 * - From then on the engine only *logs* each key that appeared or disappeared (an array push); the
 *   log is applied when a listing reads, or every `FLUSH_AT` keys. Applying asks the key map whether
 *   the key is held *now*, so the operations are idempotent, order does not matter, and a key that
 *   was granted and freed between two reads costs two no-op lookups, not an insert and a delete.
 *
 * Correct during a build too: the key map's iterator visits keys added after it started, skips keys
 * deleted before it reached them, and every change meanwhile is in the log.
 */
export class HeldKeyIndex {
  readonly #keys = new SortedKeys();
  readonly #isHeld: (key: string) => boolean;
  #log: string[] = [];
  #building: Iterator<string> | undefined;

  constructor(heldKeys: Iterable<string>, isHeld: (key: string) => boolean) {
    this.#isHeld = isHeld;
    this.#building = heldKeys[Symbol.iterator]();
  }

  /** The key appeared in or left the key map. Hot path: one push, a flush every `FLUSH_AT`. */
  touched(key: string): void {
    if (this.#log.push(key) >= FLUSH_AT) this.#flush();
  }

  /** Every key left the key map. */
  cleared(): void {
    this.#keys.clear();
    this.#log = [];
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

  get size(): number {
    this.#flush();
    return this.#keys.size;
  }

  #flush(): void {
    const log = this.#log;
    if (log.length === 0) return;
    this.#log = [];
    for (const key of log) {
      if (this.#isHeld(key)) this.#keys.add(key);
      else this.#keys.delete(key);
    }
  }
}
