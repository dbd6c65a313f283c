/**
 * The engine's table of held keys: `SHARDS` `Map`s, a key's shard chosen by a hash of the key.
 *
 * Why not one `Map`: V8 grows a `Map` by rehashing every entry into a table twice the size, in one
 * go. At 4,194,304 held keys that blocked lockd's event loop 0.4–0.9 s, longer than a cluster's
 * peer timeout (a false failover), and again at 8,388,608; a `Map` also throws past 16,777,216
 * entries. A shard grows (or shrinks, or is compacted after deletes) on its own, rehashing about
 * 1/`SHARDS` of the keys, and the shards reach their thresholds at different moments (their sizes
 * differ by chance), so the work of one big rehash is spread over many requests.
 *
 * Memory: the same as one `Map` of the same size (a `Map` is half to fully loaded whatever its
 * size), plus `SHARDS` small objects.
 *
 * Iteration (`keys`, `values`) walks the shards in a fixed order, each with its `Map` iterator, and
 * may run while the table changes between steps (a snapshot sent in chunks): every key present for
 * the whole iteration is visited exactly once, a key deleted before the iterator reaches it is not
 * visited, and a key added (or deleted and added again) meanwhile may or may not be visited (it is
 * when its shard is the one being walked or one still ahead). A key is never visited while absent.
 */
const SHARD_BITS = 8;
const SHARDS = 1 << SHARD_BITS;

export class KeyTable<V> {
  readonly #shards: Array<Map<string, V>> = Array.from({ length: SHARDS }, () => new Map());
  #size = 0;
  /**
   * The last key hashed and its shard. A request looks its key up and then adds or deletes it (an
   * acquire of a free key, a release), so this spares the second hash; a different string with the
   * same text (a release's key against the holder's) also hits, for a compare of the text.
   */
  #lastKey = "";
  #lastShard = shardOf("");

  get size(): number {
    return this.#size;
  }

  get(key: string): V | undefined {
    return this.#shard(key).get(key);
  }

  has(key: string): boolean {
    return this.#shard(key).has(key);
  }

  set(key: string, value: V): void {
    const shard = this.#shard(key);
    const before = shard.size;
    shard.set(key, value);
    this.#size += shard.size - before;
  }

  /** True if `key` was there. */
  delete(key: string): boolean {
    if (!this.#shard(key).delete(key)) return false;
    this.#size -= 1;
    return true;
  }

  /**
   * Empties every shard in place (each `Map` drops its table), so an iteration under way ends
   * instead of walking what was there.
   */
  clear(): void {
    for (const shard of this.#shards) shard.clear();
    this.#size = 0;
  }

  #shard(key: string): Map<string, V> {
    if (key !== this.#lastKey) {
      this.#lastKey = key;
      this.#lastShard = shardOf(key);
    }
    return this.#shards[this.#lastShard]!;
  }

  *keys(): Generator<string> {
    for (const shard of this.#shards) yield* shard.keys();
  }

  *values(): Generator<V> {
    for (const shard of this.#shards) yield* shard.values();
  }
}

/**
 * The shard of `key`: FNV-1a over its UTF-16 units, then the top bits (a multiplicative hash mixes
 * its high bits best). The whole key is read, so keys that differ anywhere spread over the shards;
 * that costs about as much per unit as the decoder's own check of the key, and the table reads each
 * request's key once (see `#shard`).
 */
export function shardOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return hash >>> (32 - SHARD_BITS);
}
