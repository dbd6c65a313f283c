import { checkLimits, DEFAULT_LIMITS } from "@lock/protocol";
import { DEFAULT_ENGINE_LIMITS } from "./engine/engine.js";

/**
 * Every limit lockd enforces, with its default. Each one has an error code a client sees when it
 * is hit (docs/protocol.md) and a flag in lockd (docs/operations.md).
 */
export interface ServerLimits {
  /** Longest request line in bytes (`LINE_TOO_LONG`). */
  readonly maxLineBytes: number;
  /** Longest key in UTF-8 bytes (`KEY_TOO_LONG`). */
  readonly maxKeyBytes: number;
  /** Longest lease a client may ask for (`LEASE_OUT_OF_RANGE`). */
  readonly maxLeaseMs: number;
  /** Longest bounded wait (`WAIT_OUT_OF_RANGE`); `wait 0` (forever) is always allowed. */
  readonly maxWaitMs: number;
  /** Queued acquires per connection (`TOO_MANY_REQUESTS`). */
  readonly maxPendingPerConnection: number;
  /** Queued acquires per key (`TOO_MANY_WAITERS`). */
  readonly maxWaitersPerKey: number;
  /** Keys held at once (`TOO_MANY_KEYS`). */
  readonly maxKeys: number;
  /** Distinct keys in one bundle, `B` (`TOO_MANY_BUNDLE_KEYS`). */
  readonly maxBundleKeys: number;
  /** Open client connections (`TOO_MANY_CONNECTIONS`). */
  readonly maxConnections: number;
  /**
   * With an auth token, connections that have not authenticated yet (`TOO_MANY_UNAUTHENTICATED`):
   * when this many, or `maxConnections` in all, are open, a new connection takes the slot of the
   * oldest unauthenticated one.
   */
  readonly maxUnauthenticated: number;
  /**
   * A connection with no complete line received and nothing queued for this long is closed
   * (`IDLE_TIMEOUT`); bytes of an unfinished line do not count. 0 = never.
   */
  readonly idleTimeoutMs: number;
  /** With an auth token, a connection must authenticate within this time (`AUTH_TIMEOUT`). */
  readonly authTimeoutMs: number;
  /**
   * A wrong auth secret is answered (`AUTH_FAILED`) this long after it arrived, then the connection
   * is closed: one guess per connection, and no faster than this.
   */
  readonly authFailureDelayMs: number;
  /** Bytes of replies buffered for a slow reader before the server stops reading its requests. */
  readonly writeHighWaterBytes: number;
  /**
   * Bytes of replies a connection may leave unread in all: past it the connection is closed at once
   * (`SLOW_READER`). At least `writeHighWaterBytes`.
   */
  readonly maxUnsentBytes: number;
  /**
   * A connection whose replies passed `writeHighWaterBytes` and have not all been written within
   * this time is closed (`SLOW_READER`), even with acquires queued. 0 = never.
   */
  readonly writeTimeoutMs: number;
  /**
   * Requests of one connection run in one event-loop turn; the rest wait for the next turn, so one
   * client's pipeline cannot hold up other connections and timers. At least 1.
   */
  readonly maxRequestsPerTurn: number;
  /** Keys one connection holds or has queued acquires for (`TOO_MANY_CONNECTION_KEYS`). */
  readonly maxKeysPerConnection: number;
  /** Keys one connection watches (`O`; `TOO_MANY_CONNECTION_WATCHES`). */
  readonly maxWatchesPerConnection: number;
  /** Watches of all connections together (`TOO_MANY_WATCHES`): bounds the watch registry's memory. */
  readonly maxWatches: number;
}

const HOUR_MS = 3_600_000;

export const DEFAULT_SERVER_LIMITS: ServerLimits = Object.freeze({
  maxLineBytes: DEFAULT_LIMITS.maxLineBytes,
  maxKeyBytes: DEFAULT_LIMITS.maxKeyBytes,
  maxLeaseMs: 24 * HOUR_MS,
  maxWaitMs: 24 * HOUR_MS,
  maxPendingPerConnection: 10_000,
  maxWaitersPerKey: DEFAULT_ENGINE_LIMITS.maxWaitersPerKey,
  maxKeys: DEFAULT_ENGINE_LIMITS.maxKeys,
  maxBundleKeys: DEFAULT_ENGINE_LIMITS.maxBundleKeys,
  maxConnections: 10_000,
  maxUnauthenticated: 1_000,
  idleTimeoutMs: 10 * 60_000,
  authTimeoutMs: 10_000,
  authFailureDelayMs: 100,
  writeHighWaterBytes: 1 << 20,
  maxUnsentBytes: 8 << 20,
  writeTimeoutMs: 30_000,
  maxRequestsPerTurn: 1024,
  maxKeysPerConnection: 100_000,
  maxWatchesPerConnection: 1024,
  maxWatches: 100_000,
});

/**
 * The longest delay Node's timers support (2^31 - 1 ms, about 24.8 days). A longer one does not
 * wait longer: Node fires it after 1 ms.
 */
export const TIMER_MAX_MS = 2 ** 31 - 1;

/** Limits that become timer delays (a lease or wait deadline, the idle sweep, the auth timers). */
const DURATIONS = [
  "maxLeaseMs",
  "maxWaitMs",
  "idleTimeoutMs",
  "authTimeoutMs",
  "authFailureDelayMs",
  "writeTimeoutMs",
] as const;

/**
 * The defaults with `overrides` applied. Throws a RangeError, before anything is bound, for a limit
 * that no connection could work with, which would otherwise fail on the first connection or turn
 * into a timer that fires at once.
 */
export function resolveLimits(overrides: Partial<ServerLimits> = {}): ServerLimits {
  const limits = { ...DEFAULT_SERVER_LIMITS };
  for (const [name, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`limit ${name} must be a non-negative integer, got ${value}`);
    }
    (limits as Record<string, number>)[name] = value;
  }
  for (const name of DURATIONS) {
    if (limits[name] > TIMER_MAX_MS) {
      throw new RangeError(`limit ${name} must be at most ${TIMER_MAX_MS} ms, got ${limits[name]}`);
    }
  }
  if (limits.maxRequestsPerTurn < 1) throw new RangeError("limit maxRequestsPerTurn must be at least 1");
  if (limits.maxUnsentBytes < limits.writeHighWaterBytes) {
    throw new RangeError(
      `limit maxUnsentBytes (${limits.maxUnsentBytes}) must be at least writeHighWaterBytes (${limits.writeHighWaterBytes})`,
    );
  }
  checkLimits(limits);
  return limits;
}
