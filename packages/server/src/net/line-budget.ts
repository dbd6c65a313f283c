const LF = 0x0a;

/**
 * The end of the longest part of `bytes` from `start` that holds at most `maxLines` newlines: a
 * connection runs that part now and keeps the rest for a later turn. Each request ends with a
 * newline, so the part holds at most `maxLines` complete requests (the decoder may add one
 * LINE_TOO_LONG for an unfinished line it knows is too long). A part no longer than `maxLines`
 * bytes cannot hold more newlines than that, so short input is never scanned.
 */
export function linesEnd(bytes: Uint8Array, start: number, maxLines: number): number {
  if (bytes.length - start <= maxLines) return bytes.length;
  let end = start;
  for (let lines = 0; lines < maxLines; lines++) {
    const newline = bytes.indexOf(LF, end);
    if (newline < 0) return bytes.length;
    end = newline + 1;
  }
  return end;
}
