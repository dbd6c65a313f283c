import { streamInternals } from "./stream-internals.js";

/**
 * The process-wide switch for the fast paths, off by default. Both lean on Node internals (the
 * accepted socket's `_handle`, and `process.binding("stream_wrap")`, deprecated as DEP0111, which
 * `--throw-deprecation` turns fatal), so a process uses them only when its operator asked for them
 * (lockd's `--fast-io`). It is one switch for the whole process, not an option per socket, because
 * the choice is the operator's, about this Node binary, and every socket of the process (client
 * connections and peer links alike) has to follow it.
 */
let enabled = false;

/**
 * Turns the fast paths on (or off again). Turning them on looks for the write internals at once, so
 * that a DEP0111 warning comes at start-up rather than at the first connection; the return value
 * says whether they were found (false: writes keep using `socket.write`, reads still use the shared
 * buffer).
 */
export function useFastIo(on: boolean): boolean {
  enabled = on;
  return on && streamInternals() !== undefined;
}

/** Whether the fast paths are on (`useFastIo(true)` was called). */
export function fastIoEnabled(): boolean {
  return enabled;
}
