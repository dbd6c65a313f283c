import type { ErrorCode, RequestOp } from "@lock/protocol";
import type { EngineMeter } from "./engine/engine-types.js";

/**
 * Hooks for metrics, called synchronously on the hot path: implementations must be cheap
 * (increment a counter, observe a histogram) and must not throw.
 */
export interface ServerObserver {
  /** A request was decoded and is about to run. */
  request(op: RequestOp): void;
  /** A grant: `waitedMs` is 0 for an immediate grant, the queueing time for a handoff. */
  granted(waitedMs: number): void;
  /** An `E` reply was sent. */
  error(code: ErrorCode): void;
  /**
   * A connection sent a wrong auth secret (`H`); it is closed after a delay. `remoteAddress` is
   * `host:port`, an IPv6 host in brackets. The secret itself is never passed, so it cannot reach a log.
   */
  authFailed(remoteAddress: string): void;
  /**
   * A connection sent `H` to a server without an auth token: accepted (a client may be given its
   * token before the server requires one), but its token is checked by no one: lockd warns.
   */
  authNotRequired?(remoteAddress: string): void;
  /**
   * Told of every holder and queued acquire as they come and go, with wait and hold times (lockd's
   * key-family metrics). Read once, when the node is built; absent, the engine meters nothing.
   */
  readonly contention?: EngineMeter;
}

export const NO_OBSERVER: ServerObserver = {
  request() {},
  granted() {},
  error() {},
  authFailed() {},
};
