import { isIP } from "node:net";
import type { ConnectionOptions } from "node:tls";
import { DEFAULT_LIMITS, isValidAddress, isValidSecret, MAX_DURATION_MS, validateKey } from "@lock/protocol";
import { InvalidArgumentError } from "./errors.js";

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
}

export interface ResolvedOptions {
  readonly servers: readonly string[];
  readonly authToken: string | undefined;
  readonly tls: ConnectionOptions | undefined;
  readonly connectTimeoutMs: number;
  readonly reconnectIntervalMs: number;
  readonly keepAliveMs: number;
  readonly answerTimeoutMs: number;
  readonly releaseRetryMs: number;
  readonly retryIntervalMs: number;
  readonly maxKeyBytes: number;
}

export const DEFAULT_OPTIONS = Object.freeze({
  connectTimeoutMs: 5_000,
  reconnectIntervalMs: 3_000,
  keepAliveMs: 30_000,
  answerTimeoutMs: 250,
  releaseRetryMs: 5_000,
  retryIntervalMs: 200,
  maxKeyBytes: DEFAULT_LIMITS.maxKeyBytes,
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
  const number = (name: keyof typeof DEFAULT_OPTIONS, min: number): number => {
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
    keepAliveMs: number("keepAliveMs", 0),
    answerTimeoutMs: number("answerTimeoutMs", 0),
    releaseRetryMs: number("releaseRetryMs", 0),
    retryIntervalMs: number("retryIntervalMs", 1),
    maxKeyBytes: number("maxKeyBytes", 1),
  };
}

/** Throws InvalidArgumentError unless `key` can be sent as is. */
export function checkKey(key: string, maxKeyBytes: number): void {
  if (typeof key !== "string") throw new InvalidArgumentError(`key must be a string, got ${typeof key}`);
  const problem = validateKey(key, maxKeyBytes);
  if (problem === "KEY_TOO_LONG") {
    throw new InvalidArgumentError(`key is over ${maxKeyBytes} UTF-8 bytes`, { cause: problem });
  }
  if (problem !== undefined) {
    throw new InvalidArgumentError(
      `key ${JSON.stringify(key)} is empty or contains a space or control character`,
      { cause: problem },
    );
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
