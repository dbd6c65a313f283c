import type { LockMode } from "./lock-mode.js";

/**
 * The messages of watching a key (docs/protocol.md, "Watching a key"): `O <key>` asks to be told of
 * the key's holder changes, `U <key>` stops. The server answers `O` at once with the key's state, then
 * pushes an `O` line on every holder change of that key to the connections that watch it. A push never
 * carries a request id: the id is the holder's secret (it proves ownership for `R` and `X`). Types only
 * (messages.ts includes them); the codec is watch.ts.
 */

/** `O <key>`: watch the key; answered at once with its state (an `O` reply). */
export interface WatchRequest {
  readonly op: "O";
  readonly key: string;
}

/** `U <key>`: stop watching the key; answered `U <key> 1` if it was watched, `U <key> 0` if not. */
export interface UnwatchRequest {
  readonly op: "U";
  readonly key: string;
}

/**
 * `O <key> <token> <mode> <holders>`: the key's holders, as the answer to `O` and as every later push.
 * Free: `token` 0, `mode` undefined, `holders` 0. Held: `token` is the newest grant's among the current
 * holders (an exclusive key's only one), `mode` the key's (`x`, `s`, `p<N>`), `holders` how many hold it.
 */
export interface KeyStateReply {
  readonly kind: "O";
  readonly key: string;
  readonly token: bigint;
  readonly mode: LockMode | undefined;
  readonly holders: number;
}

/** `U <key> 0|1`: `watched` is true if the connection watched the key (it does not any more). */
export interface UnwatchedReply {
  readonly kind: "U";
  readonly key: string;
  readonly watched: boolean;
}
