/**
 * A set of strings kept in code-point order (the byte order of their UTF-8), for listing held keys
 * page by page. A two-level sorted list: sorted chunks of at most `MAX_CHUNK` keys, found by binary
 * search over each chunk's first key. At a million keys that is ~11 compares to find the chunk and
 * ~9 inside it, and an insert moves at most `MAX_CHUNK` array slots; simpler than a B-tree, and as
 * fast at this size. Not thread-safe, no events: the engine's `HeldKeyIndex` drives it.
 */
const MAX_CHUNK = 1024;

export class SortedKeys {
  /** Never empty chunks; `chunks[i][0]` ascends strictly with i. */
  #chunks: string[][] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Adds `key`; false if it was there. */
  add(key: string): boolean {
    if (this.#chunks.length === 0) {
      this.#chunks.push([key]);
      this.#size = 1;
      return true;
    }
    const c = this.#chunkFor(key);
    const chunk = this.#chunks[c]!;
    const at = lowerBound(chunk, key);
    if (at < chunk.length && chunk[at] === key) return false;
    chunk.splice(at, 0, key);
    this.#size += 1;
    if (chunk.length > MAX_CHUNK) this.#chunks.splice(c + 1, 0, chunk.splice(MAX_CHUNK / 2));
    return true;
  }

  /** Removes `key`; false if it was not there. */
  delete(key: string): boolean {
    if (this.#chunks.length === 0) return false;
    const c = this.#chunkFor(key);
    const chunk = this.#chunks[c]!;
    const at = lowerBound(chunk, key);
    if (at >= chunk.length || chunk[at] !== key) return false;
    chunk.splice(at, 1);
    this.#size -= 1;
    if (chunk.length === 0) this.#chunks.splice(c, 1);
    return true;
  }

  clear(): void {
    this.#chunks = [];
    this.#size = 0;
  }

  /** Keys from the first one `>= from` (or `> from` when `exclusive`), ascending. */
  *from(from: string, exclusive: boolean): Generator<string> {
    if (this.#chunks.length === 0) return;
    let c = this.#chunkFor(from);
    let at = lowerBound(this.#chunks[c]!, from);
    if (exclusive && this.#chunks[c]![at] === from) at += 1;
    for (; c < this.#chunks.length; c++, at = 0) {
      const chunk = this.#chunks[c]!;
      // Copy-free walk; the caller must not change the set while it iterates.
      for (; at < chunk.length; at++) yield chunk[at]!;
    }
  }

  /** The chunk `key` belongs in: the last whose first key is <= key (the first chunk if none). */
  #chunkFor(key: string): number {
    let low = 0;
    let high = this.#chunks.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >>> 1;
      if (compareKeys(this.#chunks[mid]![0]!, key) <= 0) low = mid;
      else high = mid - 1;
    }
    return low;
  }
}

/** The first index whose key is >= `key`. */
function lowerBound(chunk: readonly string[], key: string): number {
  let low = 0;
  let high = chunk.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (compareKeys(chunk[mid]!, key) < 0) low = mid + 1;
    else high = mid;
  }
  return low;
}

/**
 * Code-point order, which is UTF-8 byte order. JavaScript's `<` compares UTF-16 code units, which
 * puts a surrogate pair (U+10000 and up) before U+E000–U+FFFF; only that case needs fixing.
 */
export function compareKeys(a: string, b: string): number {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) return codePointRank(x) - codePointRank(y);
    return x - y;
  }
  return a.length - b.length;
}

/** Surrogates (0xD800–0xDFFF) rank above 0xE000–0xFFFF, as the code points they encode do. */
function codePointRank(unit: number): number {
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}
