/**
 * Key slots: how several clusters share one key space (docs/protocol.md, "Key slots"). Every key
 * belongs to one of 16384 slots, and a slot map gives each slot to one cluster. Not to be confused
 * with a semaphore's permit slots (`Q <key> <token> <slot> <id>`), which number the permits of one key.
 *
 * A key's slot is the CRC-16/XMODEM of its UTF-8 bytes modulo 16384, or of its hash tag's bytes: the
 * part between the first `{` and the first `}` after it, if that part is not empty. Keys that must be
 * locked together share a tag (`{order:42}:row` and `{order:42}:ledger`). Redis Cluster uses the
 * same rule, so a team that already tags its Redis keys gets the same grouping.
 */

export const KEY_SLOTS = 16_384;

/** CRC-16/XMODEM (polynomial 0x1021, initial value 0), a byte at a time. */
const CRC_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
})();

function step(crc: number, byte: number): number {
  return ((crc << 8) & 0xffff) ^ CRC_TABLE[((crc >> 8) ^ byte) & 0xff]!;
}

/**
 * The CRC of the UTF-8 encoding of `text[start, end)`, encoded on the fly (a key is hashed on every
 * request a routing client sends: no buffer per key). A lone surrogate counts as U+FFFD, as
 * `TextEncoder` would encode it; lockd refuses such keys anyway.
 */
function crc16Utf8(text: string, start: number, end: number): number {
  let crc = 0;
  for (let i = start; i < end; i++) {
    let code = text.charCodeAt(i);
    if (code < 0x80) {
      crc = step(crc, code);
      continue;
    }
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < end) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        i++;
      }
    }
    if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd;
    if (code < 0x800) {
      crc = step(crc, 0xc0 | (code >> 6));
    } else if (code < 0x10000) {
      crc = step(crc, 0xe0 | (code >> 12));
      crc = step(crc, 0x80 | ((code >> 6) & 0x3f));
    } else {
      crc = step(crc, 0xf0 | (code >> 18));
      crc = step(crc, 0x80 | ((code >> 12) & 0x3f));
      crc = step(crc, 0x80 | ((code >> 6) & 0x3f));
    }
    crc = step(crc, 0x80 | (code & 0x3f));
  }
  return crc;
}

/** The hash tag of `key` (what its slot is computed from), or the whole key if it has none. */
export function hashTag(key: string): string {
  const [start, end] = tagBounds(key);
  return key.slice(start, end);
}

function tagBounds(key: string): [number, number] {
  const open = key.indexOf("{");
  if (open >= 0) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) return [open + 1, close];
  }
  return [0, key.length];
}

/** The slot (0 to 16383) that `key` belongs to. Computed per request: no allocation. */
export function keySlot(key: string): number {
  const open = key.indexOf("{");
  if (open >= 0) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) return crc16Utf8(key, open + 1, close) & (KEY_SLOTS - 1);
  }
  return crc16Utf8(key, 0, key.length) & (KEY_SLOTS - 1);
}
