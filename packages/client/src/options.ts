import { isIP } from "node:net";
import type { ConnectionOptions } from "node:tls";
import {
  DEFAULT_LIMITS,
  EXCLUSIVE,
  isValidAddress,
  isValidSecret,
  type LockMode,
  MAX_DURATION_MS,
  MAX_PERMITS,
  permits,
  SHARED,
  validateKey,
} from "@lock/protocol";
import { InvalidArgumentError } from "./errors.js";
import type { Random } from "./jitter.js";
import type { SocketFactory } from "./socket.js";
import type { TimerQueue } from "./timers.js";

export interface LockClientOptions {
  /** lockd nodes as `host:port` (`[::1]:7420` for IPv6). One connection each; two for a single address. */
  readonly servers: readonly string[];
  /** Sent as `H <authToken>` first on every connection when set. */
  readonly authToken?: string;
  /** `true` for TLS with Node's defaults, or `node:tls` options (e.g. `{ ca }`). Default: plain TCP. */
  readonly tls?: boolean | ConnectionOptions;
  /** How long a connection may take to open (and authenticate). Default 5000. */
  readonly connectTimeoutMs?: number;
  /** Delay before reconnecting a connection that went down, and between failed attempts. Default 3000. */
  readonly reconnectIntervalMs?: number;
  /**
   * Up to this much more, at random, before each of those reconnects, so that the clients of a
   * restarted node do not all reconnect at the same moment. 0 turns it off. Default 1000.
   */
  readonly reconnectJitterMs?: number;
  /**
   * A connection that received nothing for this long is pinged; if the ping is not answered within
   * the same time the connection is treated as dead. 0 turns pings off. Default 30000 (lockd closes
   * idle connections after 10 minutes).
   */
  readonly keepAliveMs?: number;
  /**
   * A connection that owes replies and has received nothing for this long makes the client probe
   * the other nodes for a new active (a stopped process closes nothing); 0 turns this off. Default
   * 250: half of lockd's default `--peer-timeout`, so the client is looking by the time a standby
   * can promote.
   */
  readonly answerTimeoutMs?: number;
  /** How long `release()` keeps retrying while no server answers. Default 5000. */
  readonly releaseRetryMs?: number;
  /** Pause between retries of release and extend. Default 200. */
  readonly retryIntervalMs?: number;
  /** Longest key in UTF-8 bytes, checked before sending; match lockd's `--max-key-bytes`. Default 1024. */
  readonly maxKeyBytes?: number;
  /**
   * The default of `acquire`'s `waitForReady`: false fails an acquire with NoServerError once every
   * connection was tried; true keeps trying within its `waitMs` (a lockd restart). Default false.
   */
  readonly waitForReady?: boolean;
  /**
   * Opens a connection to one server instead of `node:net` (or `node:tls`): for tests and simulators
   * that run the client over something else than a real network. It returns a ClientSocket (a
   * `net.Socket` is one). Cannot be combined with `tls`. Default: `net.connect`.
   */
  readonly connect?: SocketFactory;
  /**
   * The TimerQueue (`@lock/deadline-heap`) that every timer of the client runs on, with its clock:
   * reconnects, keepalives, answer timeouts, retries, leases. For tests and simulators that step
   * time themselves (a manual clock, `host: "manual"`). The client stops it when it closes: give
   * each client its own. Default: one on the monotonic clock, woken by one real `setTimeout`.
   */
  readonly timers?: TimerQueue;
  /** The random source of the reconnect and retry jitter, numbers in [0, 1). Default `Math.random`. */
  readonly random?: Random;
  /**
   * @internal Breaks the client on purpose, for the cluster simulator's negative controls (its
   * checker must then fail): `fresh-retry-id` gives every retry of a request a new request id
   * instead of the one the server knows. Never set it otherwise.
   */
  readonly testMutation?: "fresh-retry-id";
}

export interface ResolvedOptions {
  readonly servers: readonly string[];
  readonly authToken: string | undefined;
  readonly tls: ConnectionOptions | undefined;
  readonly connectTimeoutMs: number;
  readonly reconnectIntervalMs: number;
  readonly reconnectJitterMs: number;
  readonly keepAliveMs: number;
  readonly answerTimeoutMs: number;
  readonly releaseRetryMs: number;
  readonly retryIntervalMs: number;
  readonly maxKeyBytes: number;
  readonly waitForReady: boolean;
  readonly connect: SocketFactory | undefined;
  readonly timers: TimerQueue | undefined;
  /** Undefined: `Math.random` (left unset so that the resolved defaults stay plain data). */
  readonly random: Random | undefined;
  /** @internal See LockClientOptions.testMutation. */
  readonly testMutation: "fresh-retry-id" | undefined;
}

export const DEFAULT_OPTIONS = Object.freeze({
  connectTimeoutMs: 5_000,
  reconnectIntervalMs: 3_000,
  reconnectJitterMs: 1_000,
  keepAliveMs: 30_000,
  answerTimeoutMs: 250,
  releaseRetryMs: 5_000,
  retryIntervalMs: 200,
  maxKeyBytes: DEFAULT_LIMITS.maxKeyBytes,
  waitForReady: false,
});

/** Validates and completes the client options; throws InvalidArgumentError for anything unusable. */
export function resolveOptions(options: LockClientOptions): ResolvedOptions {
  const servers = options?.servers;
  if (!Array.isArray(servers) || servers.length === 0) {
    throw new InvalidArgumentError("servers must list at least one host:port");
  }
  for (const server of servers) {
    if (typeof server !== "string" || !isValidAddress(server)) {
      throw new InvalidArgumentError(`server ${JSON.stringify(server)} is not host:port`);
    }
  }
  if (options.authToken !== undefined && !isValidSecret(options.authToken)) {
    throw new InvalidArgumentError("authToken must be 1-1024 printable ASCII characters without space");
  }
  const tls = options.tls === true ? {} : options.tls === false ? undefined : options.tls;
  checkFunction("connect", options.connect);
  checkFunction("random", options.random);
  if (options.connect !== undefined && tls !== undefined) {
    throw new InvalidArgumentError(
      "connect and tls cannot be combined: the connect function opens TLS itself",
    );
  }
  const number = (name: Exclude<keyof typeof DEFAULT_OPTIONS, "waitForReady">, min: number): number => {
    const value = options[name] ?? DEFAULT_OPTIONS[name];
    if (!Number.isSafeInteger(value) || value < min) {
      throw new InvalidArgumentError(`${name} must be an integer >= ${min}, got ${String(value)}`);
    }
    return value;
  };
  return {
    servers: [...servers],
    authToken: options.authToken,
    tls,
    connectTimeoutMs: number("connectTimeoutMs", 1),
    reconnectIntervalMs: number("reconnectIntervalMs", 0),
    reconnectJitterMs: number("reconnectJitterMs", 0),
    keepAliveMs: number("keepAliveMs", 0),
    answerTimeoutMs: number("answerTimeoutMs", 0),
    releaseRetryMs: number("releaseRetryMs", 0),
    retryIntervalMs: number("retryIntervalMs", 1),
    maxKeyBytes: number("maxKeyBytes", 1),
    waitForReady: checkFlag("waitForReady", options.waitForReady) ?? DEFAULT_OPTIONS.waitForReady,
    connect: options.connect,
    timers: options.timers,
    random: options.random,
    testMutation: options.testMutation,
  };
}

/**
 * Throws InvalidArgumentError unless `key` is a lock key: 1 to `maxKeyBytes` UTF-8 bytes with no
 * space and no control character (docs/protocol.md, "Field syntax"; the protocol separates fields
 * with spaces, so a space would split the key and shift every field after it). The message names
 * the offending character and where it is; `cause` is the protocol code (BAD_KEY, KEY_TOO_LONG).
 */
export function checkKey(key: string, maxKeyBytes: number = DEFAULT_OPTIONS.maxKeyBytes): void {
  if (typeof key !== "string") throw new InvalidArgumentError(`key must be a string, got ${typeof key}`);
  const problem = validateKey(key, maxKeyBytes);
  if (problem === "KEY_TOO_LONG") {
    throw new InvalidArgumentError(`key is over ${maxKeyBytes} UTF-8 bytes`, { cause: problem });
  }
  if (problem !== undefined) {
    throw new InvalidArgumentError(`key ${JSON.stringify(key)} ${badKeyReason(key)}`, { cause: problem });
  }
}

/** Why a key that validateKey refused is not one, for a person to read. */
function badKeyReason(key: string): string {
  if (key.length === 0) return "is empty";
  const rule = "(a key may not contain spaces or control characters)";
  for (let i = 0; i < key.length; i++) {
    const code = key.charCodeAt(i);
    const hex = `U+${code.toString(16).toUpperCase().padStart(4, "0")}`;
    if (code === 0x20) return `contains a space at index ${i} ${rule}`;
    if (code < 0x20 || code === 0x7f) return `contains the control character ${hex} at index ${i} ${rule}`;
    if (code >= 0xd800 && code <= 0xdfff) {
      const paired = code <= 0xdbff && (key.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
      if (!paired) return `contains a lone surrogate ${hex} at index ${i}, which has no UTF-8 form`;
      i++;
    }
  }
  return "is not a valid key";
}

/** How an acquire's options ask to hold the key; throws InvalidArgumentError for bad or clashing ones. */
export function checkLockMode(options: { readonly mode?: unknown; readonly permits?: unknown }): LockMode {
  const { mode, permits: limit } = options;
  if (mode !== undefined && mode !== "exclusive" && mode !== "shared")
    throw new InvalidArgumentError(`mode must be "exclusive" or "shared", got ${String(mode)}`);
  if (limit === undefined) return mode === "shared" ? SHARED : EXCLUSIVE;
  if (mode !== undefined) throw new InvalidArgumentError("give either mode or permits, not both");
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > MAX_PERMITS)
    throw new InvalidArgumentError(`permits must be an integer in 1..${MAX_PERMITS}, got ${String(limit)}`);
  return permits(limit);
}

/** Undefined, or a boolean; throws InvalidArgumentError for anything else. */
export function checkFlag(name: string, value: unknown): boolean | undefined {
  if (value === undefined || typeof value === "boolean") return value;
  throw new InvalidArgumentError(`${name} must be true or false, got ${String(value)}`);
}

function checkFunction(name: string, value: unknown): void {
  if (value !== undefined && typeof value !== "function") {
    throw new InvalidArgumentError(`${name} must be a function, got ${typeof value}`);
  }
}

/** Throws InvalidArgumentError unless `ms` is a duration the wire can carry (integer ms, `min`..max). */
export function checkDuration(name: string, ms: unknown, min: number): number {
  if (typeof ms !== "number" || !Number.isSafeInteger(ms) || ms < min || ms > MAX_DURATION_MS) {
    throw new InvalidArgumentError(`${name} must be an integer number of ms in ${min}..${MAX_DURATION_MS}`);
  }
  return ms;
}

/** SNI takes host names only; Node warns when given an IP address. */
export function serverName(host: string): string | undefined {
  return isIP(host) === 0 ? host : undefined;
}
