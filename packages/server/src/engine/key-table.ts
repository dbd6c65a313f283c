/**
 * The engine's table of held keys, split over `Map`s so that no single one ever holds more than
 * `SMALL_KEYS` keys or a `SHARDS`th of the rest.
 *
 * Why not one `Map`: V8 grows a `Map` by rehashing every entry into a table twice the size, in one
 * go. At 4,194,304 held keys that blocked lockd's event loop 0.35–0.9 s, longer than a cluster's
 * peer timeout (a false failover), and again at 8,388,608; a `Map` also throws past 16,777,216
 * entries.
 *
 * Layout: the first `SMALL_KEYS` keys go into one `Map` (`small`), as before; while the table is
 * no bigger than that, a request costs what one `Map` costs (no hashing of our own, the locality of
 * one table). Keys that arrive while `small` is full go into one of `SHARDS` shard `Map`s chosen
 * by a hash of the key (`shardOf`). A key stays in the `Map` it was added to until it is deleted;
 * `small` takes new keys again when it has room. So `small` never grows past `SMALL_KEYS` (its
 * largest rehash copies 131,072 keys, about 10 ms), and each shard holds about 1/`SHARDS` of the
 * rest (at 5M keys about 43,500, its last grow having copied 32,768); the shards reach their
 * thresholds at different moments (their sizes differ by chance), so the work of one big rehash is
 * spread over many requests. (Fewer, bigger shards cost more than their copying: 28 shards grew
 * within a few thousand requests of each other at 3.8M keys, and each new 7 MiB table made V8's
 * incremental marking take up to 176 ms of the request that allocated it.) Lookups try `small` alone while the shards are empty, else whichever
 * of `small` and the key's shard holds more keys first.
 *
 * Cost: past `SMALL_KEYS` keys, a request pays a hash of its key and, for a key not held (an
 * acquire of a free key), a lookup in both `small` and a shard. Memory: that of one `Map` of the
 * same size, give or take (a `Map` is half to fully loaded whatever its size). `SHARDS` is 112 so
 * that at a million keys the tables add up to the capacity of one `Map` (2^20 = 2^17 + 112 · 2^13)
 * and each is big enough for V8 to keep out of its young generation (which would copy it):
 * memory per held lock at 1M is what it was with one `Map`.
 *
 * Iteration (`keys`, `maps`) walks `small` and then the shards, each with its `Map` iterator, and
 * may run while the table changes between steps (a snapshot sent in chunks): every key present for
 * the whole iteration is visited exactly once (a key never moves between `Map`s), a key deleted
 * before the iterator reaches it is not visited, and a key added meanwhile may or may not be
 * (deleted and added again, it may be visited twice: once per time it was added). A key is never
 * visited while it is absent.
 */
export const SMALL_KEYS = 2 ** 17;
const SHARDS = 112;

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
 * The shard of `key`, 0 to `SHARDS` - 1: FNV-1a over its UTF-16 units, mixed, scaled down from
 * its top 16 bits (a multiplicative hash mixes its high bits best). The whole key is read, so keys that
 * differ anywhere spread over the shards; that costs about as much per unit as the decoder's own
 * check of the key, and only requests made while the shards hold keys pay it, once per request
 * (see the memo).
 */
export function shardOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  // FNV's last units reach the top bits through a single multiply: mix once more (MurmurHash3's
  // finaliser step), or keys that differ in their last digit crowd some shards by ±20 %.
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  return ((hash >>> 16) * SHARDS) >>> 16;
}
