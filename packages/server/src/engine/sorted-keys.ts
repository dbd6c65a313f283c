/**
 * A set of strings kept in code-point order (the byte order of their UTF-8), for listing held keys
 * page by page. A two-level sorted list: sorted chunks of at most `MAX_CHUNK` keys, found by binary
 * search over each chunk's first key. At a million keys that is ~11 compares to find the chunk and
 * ~9 inside it, and an insert moves at most `MAX_CHUNK` array slots; simpler than a B-tree, and as
 * fast at this size. Not thread-safe, no events: the engine's `HeldKeyIndex` drives it.
 *
 * Keys are stored as their `sortKey`, which JavaScript's native `<` (UTF-16 code units, fast) orders
 * by code point; for keys without characters from U+D800 up (nearly all) that is the key itself.
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
  add(original: string): boolean {
    const key = sortKey(original);
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
  delete(original: string): boolean {
    const key = sortKey(original);
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
  *from(original: string, exclusive: boolean): Generator<string> {
    if (this.#chunks.length === 0) return;
    const from = sortKey(original);
    let c = this.#chunkFor(from);
    let at = lowerBound(this.#chunks[c]!, from);
    if (exclusive && this.#chunks[c]![at] === from) at += 1;
    for (; c < this.#chunks.length; c++, at = 0) {
      const chunk = this.#chunks[c]!;
      // Copy-free walk; the caller must not change the set while it iterates.
      for (; at < chunk.length; at++) yield originalKey(chunk[at]!);
    }
  }

  /** The chunk `key` belongs in: the last whose first key is <= key (the first chunk if none). */
  #chunkFor(key: string): number {
    let low = 0;
    let high = this.#chunks.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >>> 1;
      if (this.#chunks[mid]![0]! <= key) low = mid;
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
    if (chunk[mid]! < key) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Any unit from 0xD800 up: a surrogate, or U+E000–U+FFFF. */
const HIGH_UNITS = /[\ud800-\uffff]/;

/**
 * A string whose UTF-16 order is `key`'s code-point order (UTF-8 byte order). JavaScript's `<` puts
 * a surrogate pair (U+10000 and up) before U+E000–U+FFFF, the only disagreement; remapping units
 * from 0xD800 up (surrogates above 0xF7FF, U+E000–U+FFFF below) fixes it. A bijection on 16-bit
 * units, so `originalKey` undoes it.
 */
export function sortKey(key: string): string {
  return remapHighUnits(key, (unit) => (unit >= 0xe000 ? unit - 0x800 : unit + 0x2000));
}

function originalKey(stored: string): string {
  return remapHighUnits(stored, (unit) => (unit >= 0xf800 ? unit - 0x2000 : unit + 0x800));
}

/** `text` with every unit from 0xD800 up replaced by `map(unit)`; `text` itself if it has none. */
function remapHighUnits(text: string, map: (unit: number) => number): string {
  if (!HIGH_UNITS.test(text)) return text;
  let mapped = "";
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    mapped += String.fromCharCode(unit < 0xd800 ? unit : map(unit));
  }
  return mapped;
}

/** Code-point order, which is UTF-8 byte order (for keys that are not stored). */
export function compareKeys(a: string, b: string): number {
  const x = sortKey(a);
  const y = sortKey(b);
  return x < y ? -1 : x > y ? 1 : 0;
}
