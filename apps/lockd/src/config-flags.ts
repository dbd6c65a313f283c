import { DEFAULT_SERVER_LIMITS, type ServerLimits } from "@lock/server";

/** lockd's flags (config.ts parses them): each one's variable, default, help line and range. */

/**
 * Bytes a line needs besides its key: the longest request (`A <key> <lease> <wait> <id>`, 98) and
 * the longest replication frame a standby reads on this port (`!G <seq> <key> <token> <leaseMs>
 * <id>`, 118), with some to spare.
 */
export const LINE_ROOM_AROUND_KEY = 128;

/** Each flag, its environment variable, and its help line (docs/operations.md mirrors this). */
export const FLAGS = {
  listen: { env: "LOCKD_LISTEN", default: "127.0.0.1:7420", help: "host:port to serve clients on" },
  advertise: {
    env: "LOCKD_ADVERTISE",
    help: "host:port clients and peers use for this node (default: --listen)",
  },
  peers: {
    env: "LOCKD_PEERS",
    help: "comma-separated host:port of every cluster node, highest priority first",
  },
  "heartbeat-interval": {
    env: "LOCKD_HEARTBEAT_INTERVAL",
    default: "0.1",
    help: "seconds between peer heartbeats",
    seconds: { minMs: 1 },
  },
  "peer-timeout": {
    env: "LOCKD_PEER_TIMEOUT",
    default: "0.5",
    help: "seconds without a heartbeat before a peer is dead; longer than --heartbeat-interval",
    seconds: { minMs: 1 },
  },
  "node-id": {
    env: "LOCKD_NODE_ID",
    help: "0-255, this node's part of every token; unique across clusters whose tokens meet (default: position in --peers)",
    count: { min: 0 },
  },
  coordinator: {
    env: "LOCKD_COORDINATOR",
    help: "etcd://host:port[,host:port]/prefix or postgres://host/db: a store that decides which node is active and mints every epoch (needs --peers and --cluster-name); off if unset",
  },
  "cluster-name": {
    env: "LOCKD_CLUSTER_NAME",
    help: "this cluster's name in the coordinator: letters, digits, '.', '_' or '-', at most 64",
  },
  "slot-map": {
    env: "LOCKD_SLOT_MAP",
    help: "JSON file of the slot map (clusters and their slot ranges) for several clusters over one key space; written to the coordinator if it has none, whose map wins after that (needs --coordinator)",
  },
  "coordinator-lease": {
    env: "LOCKD_COORDINATOR_LEASE",
    default: "2",
    help: "seconds an active's ownership lease lasts in the coordinator, at least 1: a crashed active is replaced after about this long",
    seconds: { minMs: 1_000 },
  },
  "max-clock-skew": {
    env: "LOCKD_MAX_CLOCK_SKEW",
    default: "0.5",
    help: "seconds this machine's clock may be off true time, at most 60; a lone restart waits about twice this",
    seconds: { minMs: 0 },
  },
  "data-dir": { env: "LOCKD_DATA_DIR", default: ".lockd", help: "directory for the token epoch" },
  admin: {
    env: "LOCKD_ADMIN",
    help: "host:port for the HTTP admin server (status page, healthz, readyz, status, locks, metrics); off if unset",
  },
  "admin-token-file": {
    env: "LOCKD_ADMIN_TOKEN_FILE",
    help: "file holding a bearer token the admin server asks for (or set LOCKD_ADMIN_TOKEN)",
  },
  "auth-token-file": {
    env: "LOCKD_AUTH_TOKEN_FILE",
    help: "file holding the shared auth token (or set LOCKD_AUTH_TOKEN)",
  },
  "peer-token-file": {
    env: "LOCKD_PEER_TOKEN_FILE",
    help: "file holding the cluster's peer token, needed with --peers; not the auth token (or set LOCKD_PEER_TOKEN)",
  },
  "tls-cert": {
    env: "LOCKD_TLS_CERT",
    help: "PEM certificate file; with --tls-key, serve TLS (SIGHUP reads the TLS files again)",
  },
  "tls-key": { env: "LOCKD_TLS_KEY", help: "PEM private key file" },
  "tls-ca": {
    env: "LOCKD_TLS_CA",
    help: "PEM CA file that peers' certificates must chain to (default: system CAs)",
  },
  "admin-tls-cert": {
    env: "LOCKD_ADMIN_TLS_CERT",
    help: "PEM certificate file; with --admin-tls-key, the admin server serves HTTPS (may be the --tls-cert file)",
  },
  "admin-tls-key": { env: "LOCKD_ADMIN_TLS_KEY", help: "PEM private key file for --admin-tls-cert" },
  "log-level": {
    env: "LOCKD_LOG_LEVEL",
    default: "info",
    help: "fatal, error, warn, info, debug, trace or silent",
  },
  "shutdown-grace": {
    env: "LOCKD_SHUTDOWN_GRACE",
    default: "2",
    help: "seconds to let connections close on stop",
    seconds: { minMs: 0 },
  },
  "max-lease": {
    env: "LOCKD_MAX_LEASE",
    help: "longest lease in seconds",
    limit: "maxLeaseMs",
    seconds: { minMs: 1 },
  },
  "max-wait": {
    env: "LOCKD_MAX_WAIT",
    help: "longest bounded wait in seconds",
    limit: "maxWaitMs",
    seconds: { minMs: 1 },
  },
  "max-pending": {
    env: "LOCKD_MAX_PENDING",
    help: "queued acquires per connection",
    limit: "maxPendingPerConnection",
    count: { min: 1 },
  },
  "max-waiters-per-key": {
    env: "LOCKD_MAX_WAITERS_PER_KEY",
    help: "queued acquires per key",
    limit: "maxWaitersPerKey",
    count: { min: 1 },
  },
  "max-keys": { env: "LOCKD_MAX_KEYS", help: "keys held at once", limit: "maxKeys", count: { min: 1 } },
  "max-bundle-keys": {
    env: "LOCKD_MAX_BUNDLE_KEYS",
    help: "distinct keys in one bundle (B)",
    limit: "maxBundleKeys",
    count: { min: 1 },
  },
  "max-connections": {
    env: "LOCKD_MAX_CONNECTIONS",
    help: "open client connections",
    limit: "maxConnections",
    count: { min: 1 },
  },
  "max-unauthenticated": {
    env: "LOCKD_MAX_UNAUTHENTICATED",
    help: "connections not yet authenticated (with an auth token); the oldest makes room for a new one",
    limit: "maxUnauthenticated",
    count: { min: 1 },
  },
  "max-line-bytes": {
    env: "LOCKD_MAX_LINE_BYTES",
    help: `longest request line; at least --max-key-bytes + ${LINE_ROOM_AROUND_KEY}`,
    limit: "maxLineBytes",
    // The minimum depends on --max-key-bytes and the auth token: checkLineRoom says what it is.
    count: { min: 0 },
  },
  "max-key-bytes": {
    env: "LOCKD_MAX_KEY_BYTES",
    help: "longest key in UTF-8 bytes",
    limit: "maxKeyBytes",
    count: { min: 1 },
  },
  "idle-timeout": {
    env: "LOCKD_IDLE_TIMEOUT",
    help: "seconds before an idle connection is closed (0: never)",
    limit: "idleTimeoutMs",
    seconds: { minMs: 0 },
  },
  "auth-timeout": {
    env: "LOCKD_AUTH_TIMEOUT",
    help: "seconds a connection has to authenticate",
    limit: "authTimeoutMs",
    seconds: { minMs: 1 },
  },
  semaphores: {
    env: "LOCKD_SEMAPHORES",
    help: "PATTERN=N,...: keys that are semaphores of N permits (a key, or a prefix and *: tenant:*=5); acquires must agree",
  },
  "key-families": {
    env: "LOCKD_KEY_FAMILIES",
    help: "NAME=REGEX,...: the key families contention metrics are labelled by, first match wins (orders:*=^orders:); other keys: up to their first ':' or digit, then *",
  },
  "key-family-limit": {
    env: "LOCKD_KEY_FAMILY_LIMIT",
    default: "100",
    help: "key families labelled at most, 0 to 10000; keys past them count as family 'other' (0: no family metrics)",
    count: { min: 0 },
  },
  "max-connection-keys": {
    env: "LOCKD_MAX_CONNECTION_KEYS",
    help: "keys one connection holds or has queued acquires for",
    limit: "maxKeysPerConnection",
    count: { min: 1 },
  },
  "max-connection-watches": {
    env: "LOCKD_MAX_CONNECTION_WATCHES",
    help: "keys one connection watches (O)",
    limit: "maxWatchesPerConnection",
    count: { min: 1 },
  },
  "max-watches": {
    env: "LOCKD_MAX_WATCHES",
    help: "watches of all connections together (O)",
    limit: "maxWatches",
    count: { min: 1 },
  },
  "max-unsent-bytes": {
    env: "LOCKD_MAX_UNSENT_BYTES",
    help: "reply bytes a client may leave unread before its connection is closed; reading it stops past 1 MiB",
    limit: "maxUnsentBytes",
    count: { min: 1 << 20 },
  },
  "write-timeout": {
    env: "LOCKD_WRITE_TIMEOUT",
    help: "seconds a client may leave over 1 MiB of replies unread before its connection is closed (0: never)",
    limit: "writeTimeoutMs",
    seconds: { minMs: 0 },
  },
  "max-requests-per-turn": {
    env: "LOCKD_MAX_REQUESTS_PER_TURN",
    help: "requests of one connection run before other connections get a turn",
    limit: "maxRequestsPerTurn",
    count: { min: 1 },
  },
} as const satisfies Record<
  string,
  {
    env: string;
    help: string;
    default?: string;
    limit?: keyof ServerLimits;
    /** A duration in seconds (held in ms), from `minMs` to the longest Node timer. */
    seconds?: { minMs: number };
    /** A whole number from `min`. */
    count?: { min: number };
  }
>;

export type FlagName = keyof typeof FLAGS;
type Flag = (typeof FLAGS)[FlagName];
export type NumberFlag = Extract<Flag, { seconds: object } | { count: object }>;

export function usage(): string {
  const lines = ["usage: lockd [flags]", ""];
  for (const [name, flag] of Object.entries(FLAGS) as Array<[FlagName, (typeof FLAGS)[FlagName]]>) {
    const fallback =
      "default" in flag
        ? ` (default ${flag.default})`
        : "limit" in flag
          ? ` (default ${defaultLimit(flag)})`
          : "";
    lines.push(`  --${name.padEnd(22)} ${flag.help}${fallback}  [${flag.env}]`);
  }
  lines.push(
    `  --${"insecure".padEnd(22)} allow a non-loopback --listen without an auth token, --admin without an admin token, or --peers without a peer token  [LOCKD_INSECURE=1]`,
  );
  lines.push(
    `  --${"fast-io".padEnd(22)} socket I/O through Node internals (process.binding, DEP0111): 2-3 µs less per round trip; not with --throw-deprecation  [LOCKD_FAST_IO=1]`,
  );
  lines.push(
    `  --${"config".padEnd(22)} a .toml, .yaml or .json file of these flags (keys as named here, without --); flags and LOCKD_* variables win over it  [LOCKD_CONFIG]`,
  );
  lines.push(`  --${"help".padEnd(22)} print this help`);
  lines.push(`  --${"version".padEnd(22)} print lockd's version`);
  return lines.join("\n");
}

function defaultLimit(flag: { limit: keyof ServerLimits; seconds?: object }): string {
  const value = DEFAULT_SERVER_LIMITS[flag.limit];
  return flag.seconds ? `${value / 1000} s` : String(value);
}

/** What `--log-level` accepts: pino's levels. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
