/**
 * Returns `text` as a string that shares no memory with the string it was cut from.
 *
 * V8 represents a substring of 13 or more characters as a view into its parent. The decoder cuts
 * lines out of a whole chunk's text, so without this a key held by lockd (or an id kept by a
 * client) would keep its entire chunk (up to 64 KiB of other requests) alive for as long as the
 * lock is held: measured at 60 KB per held key with padded chunks. Prepending a character makes a
 * cons string that `slice` must flatten into a fresh copy first; the result then retains only
 * that copy. Shorter strings are already copied by V8.
 */
export function detach(text: string): string {
  return text.length < 13 ? text : ` ${text}`.slice(1);
}
