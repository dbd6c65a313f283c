/**
 * The engine's table of held keys: no single `Map` in it ever holds more than `SMALL_KEYS` keys
 * plus a share of the rest.
 *
 * Why not one `Map`: V8 grows a `Map` by rehashing every entry into a table twice the size, in one
 * go. At 4,194,304 held keys that blocked lockd's event loop 0.4–0.9 s, longer than a cluster's
 * peer timeout (a false failover), and again at 8,388,608; a `Map` also throws past 16,777,216
 * entries.
 *
 * Layout: the first `SMALL_KEYS` keys go into one `Map` (`small`), as before; while the table is
 * no bigger than that, a request costs what one `Map` costs (no hashing of our own, the locality of
 * one table). Keys that arrive while `small` is full go into one of `SHARDS` shard `Map`s chosen
 * by a hash of the key (`shardOf`). A key stays in the `Map` it was added to until it is deleted;
 * `small` takes new keys again when it has room. So `small` never grows past `SMALL_KEYS` (its
 * largest rehash copies that many keys, a few ms), and each shard holds about 1/`SHARDS` of the
 * rest (at 5M keys about 19,000, its last grow having copied 16,384); the shards reach their
 * thresholds at different moments (their sizes differ by chance), so the work of one big rehash is
 * spread over many requests. Lookups try `small` alone while the shards are empty, else whichever
 * of `small` and the key's shard holds more keys first.
 *
 * Memory: about that of one `Map` (a `Map` is half to fully loaded, whatever its size), plus
 * `SHARDS` small objects.
 *
 * Iteration (`keys`, `maps`) walks `small` and then the shards, each with its `Map` iterator, and
 * may run while the table changes between steps (a snapshot sent in chunks): every key present for
 * the whole iteration is visited exactly once (a key never moves between `Map`s), a key deleted
 * before the iterator reaches it is not visited, and a key added meanwhile may or may not be
 * (deleted and added again, it may be visited twice: once per time it was added). A key is never
 * visited while it is absent.
 */
export const SMALL_KEYS = 2 ** 17;
const SHARD_BITS = 8;
const SHARDS = 1 << SHARD_BITS;

export class KeyTable<V extends object> {
  /** How many keys `small` takes (tests set it low, to reach the shards with a few keys). */
  readonly #smallKeys: number;
  /** `small`, then the shards: a key's shard is `#maps[1 + shardOf(key)]`. */
  readonly #maps: Array<Map<string, V>> = Array.from({ length: 1 + SHARDS }, () => new Map());
  readonly #small = this.#maps[0]!;
  /** Keys in the shards (not in `small`). */
  #sharded = 0;
  /*
   * While any key is in a shard, where the last key looked up or changed is: a request looks its
   * key up and then changes it (an acquire of a free key adds it; a release checks ownership,
   * looks it up again and deletes it), so this spares the repeated lookups and hashes. A different
   * string with the same text (a release's key against the holder's) also hits, for a compare of
   * the text. Read only while the shards hold keys (the add that ends their being empty sets it),
   * and kept true meanwhile by every add and delete of `#memoKey`.
   */
  #memoKey: string | undefined = undefined;
  #memoValue: V | undefined = undefined;
  /** The `Map` that holds `#memoKey`; undefined if it is absent. */
  #memoMap: Map<string, V> | undefined = undefined;
  /** `#memoKey`'s shard, once hashed. */
  #memoShard: Map<string, V> | undefined = undefined;

  constructor(smallKeys = SMALL_KEYS) {
    this.#smallKeys = smallKeys;
  }

  get size(): number {
    return this.#small.size + this.#sharded;
  }

  get(key: string): V | undefined {
    if (this.#sharded === 0) return this.#small.get(key);
    if (key !== this.#memoKey) this.#locate(key);
    return this.#memoValue;
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** Adds `key`, which the caller has just found absent. */
  add(key: string, value: V): void {
    const small = this.#small;
    if (small.size < this.#smallKeys) {
      small.set(key, value);
      if (key === this.#memoKey) this.#remember(value, small);
      return;
    }
    if (key !== this.#memoKey) {
      this.#memoKey = key;
      this.#memoShard = undefined;
    }
    const shard = this.#keyShard(key);
    shard.set(key, value);
    this.#sharded += 1;
    this.#remember(value, shard);
  }

  /** True if `key` was there. */
  delete(key: string): boolean {
    if (this.#sharded === 0) return this.#small.delete(key);
    if (key !== this.#memoKey) this.#locate(key);
    const map = this.#memoMap;
    if (map === undefined) return false;
    map.delete(key);
    this.#remember(undefined, undefined);
    if (map !== this.#small) this.#sharded -= 1;
    return true;
  }

  /**
   * Empties every `Map` in place (each drops its table), so an iteration under way ends instead of
   * walking what was there.
   */
  clear(): void {
    for (const map of this.#maps) map.clear();
    this.#sharded = 0;
    this.#memoKey = undefined;
    this.#remember(undefined, undefined);
  }

  /**
   * `small` and the shards, for a scan of the whole table: nested `for…of` over these `Map`s is the
   * fastest walk (several times faster than `keys()`, which hands out result objects one by one).
   */
  get maps(): ReadonlyArray<ReadonlyMap<string, V>> {
    return this.#maps;
  }

  keys(): IterableIterator<string> {
    return new MapsIterator(this.#maps);
  }

  /** Finds `key` for the memo: in whichever of `small` and its shard holds more keys first. */
  #locate(key: string): void {
    this.#memoKey = key;
    this.#memoShard = undefined;
    const small = this.#small;
    if (small.size >= this.#sharded) {
      const value = small.get(key);
      if (value === undefined) this.#lookIn(this.#keyShard(key), key);
      else this.#remember(value, small);
      return;
    }
    const shard = this.#keyShard(key);
    const value = shard.get(key);
    if (value === undefined) this.#lookIn(small, key);
    else this.#remember(value, shard);
  }

  #lookIn(map: Map<string, V>, key: string): void {
    const value = map.get(key);
    this.#remember(value, value === undefined ? undefined : map);
  }

  /** The shard of `key`, which is `#memoKey`. */
  #keyShard(key: string): Map<string, V> {
    this.#memoShard ??= this.#maps[1 + shardOf(key)]!;
    return this.#memoShard;
  }

  #remember(value: V | undefined, map: Map<string, V> | undefined): void {
    this.#memoValue = value;
    this.#memoMap = map;
  }
}

/**
 * The keys of several `Map`s in turn, handing out each `Map` iterator's own results. Not a
 * generator: a generator's `yield*` costs about 20 times as much per step (0.57 s per million keys).
 */
class MapsIterator implements IterableIterator<string> {
  readonly #maps: ReadonlyArray<Map<string, unknown>>;
  #index = 0;
  #current: Iterator<string>;

  constructor(maps: ReadonlyArray<Map<string, unknown>>) {
    this.#maps = maps;
    this.#current = maps[0]!.keys();
  }

  next(): IteratorResult<string> {
    for (;;) {
      const result = this.#current.next();
      if (!result.done || this.#index === this.#maps.length - 1) return result;
      this.#index += 1;
      this.#current = this.#maps[this.#index]!.keys();
    }
  }

  [Symbol.iterator](): IterableIterator<string> {
    return this;
  }
}

/**
 * The shard of `key`, 0 to `SHARDS` - 1: FNV-1a over its UTF-16 units, then the top bits (a
 * multiplicative hash mixes its high bits best). The whole key is read, so keys that differ anywhere
 * spread over the shards; that costs about as much per unit as the decoder's own check of the key,
 * and only keys beyond `SMALL_KEYS` pay it, once per request (see `#shard`).
 */
export function shardOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return hash >>> (32 - SHARD_BITS);
}
