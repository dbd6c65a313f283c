import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { formatAddress, MAX_NODE_ID } from "@lock/protocol";
import { DEFAULT_SERVER_LIMITS, type ServerLimits } from "@lock/server";
import { ConfigError, type HostPort, isLoopback, parseHostPort } from "./address.js";
import { readConfigFile } from "./config-file.js";
import { parseCount, parseSeconds } from "./numbers.js";
import { readSecret, readSecretFile, type Setting, secretFromEnv } from "./secrets.js";

/**
 * lockd's configuration from flags, `LOCKD_*` environment variables and a config file (`--config`,
 * config-file.ts): a flag wins over its variable, a variable over the file, the file over the default. Secrets come from a file or the environment, never from a flag: command lines are
 * visible to every user of the machine through `ps`.
 */
export interface LockdConfig {
  readonly listen: HostPort;
  readonly advertise: string | undefined;
  readonly dataDir: string;
  readonly admin: HostPort | undefined;
  readonly authToken: string | undefined;
  /**
   * The cluster's peer token: peer links prove it in a handshake (docs/protocol.md). Required with
   * --peers unless --insecure; never equal to the auth or admin token.
   */
  readonly peerToken: string | undefined;
  /** With it, the admin server asks for `Authorization: Bearer <adminToken>` (all but /healthz). */
  readonly adminToken: string | undefined;
  readonly tls: { cert: Buffer; key: Buffer } | undefined;
  /** CA certificates that peers' certificates must chain to (cluster links over TLS). */
  readonly tlsCa: Buffer | undefined;
  readonly insecure: boolean;
  readonly logLevel: string;
  readonly shutdownGraceMs: number;
  readonly limits: Partial<ServerLimits>;
  /** Cluster peers, highest priority first, including this node's advertised address. */
  readonly peers: readonly string[] | undefined;
  readonly heartbeatMs: number;
  readonly peerTimeoutMs: number;
  /** The token epoch's node id (0..255); default: the position in --peers, or 0. */
  readonly nodeId: number | undefined;
  readonly maxClockSkewMs: number;
  /**
   * Socket I/O through Node internals (@lock/socket-io's fast paths): about a microsecond less per
   * request, at the price of `process.binding` (DEP0111). Off by default.
   */
  readonly fastIo: boolean;
}

/**
 * Bytes a line needs besides its key: the longest request (`A <key> <lease> <wait> <id>`, 98) and
 * the longest replication frame a standby reads on this port (`!G <seq> <key> <token> <leaseMs>
 * <id>`, 118), with some to spare.
 */
const LINE_ROOM_AROUND_KEY = 128;

/** Each flag, its environment variable, and its help line (docs/operations.md mirrors this). */
const FLAGS = {
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
  "tls-cert": { env: "LOCKD_TLS_CERT", help: "PEM certificate file; with --tls-key, serve TLS" },
  "tls-key": { env: "LOCKD_TLS_KEY", help: "PEM private key file" },
  "tls-ca": {
    env: "LOCKD_TLS_CA",
    help: "PEM CA file that peers' certificates must chain to (default: system CAs)",
  },
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
  "max-connection-keys": {
    env: "LOCKD_MAX_CONNECTION_KEYS",
    help: "keys one connection holds or has queued acquires for",
    limit: "maxKeysPerConnection",
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

type FlagName = keyof typeof FLAGS;
type Flag = (typeof FLAGS)[FlagName];
type NumberFlag = Extract<Flag, { seconds: object } | { count: object }>;

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

export type ParsedCommand =
  | { help: true }
  | { help: false; version: true }
  | { help: false; version: false; config: LockdConfig };

/** What `--log-level` accepts: pino's levels. */
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

export function parseConfig(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  readFile: (path: string) => Buffer = (path) => readFileSync(path),
): ParsedCommand {
  const options = Object.fromEntries(
    Object.keys(FLAGS).map((name) => [name, { type: "string" as const }]),
  ) as Record<FlagName, { type: "string" }>;
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        ...options,
        insecure: { type: "boolean" },
        "fast-io": { type: "boolean" },
        config: { type: "string" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  if (values.help) return { help: true };
  if (values.version) return { help: false, version: true };

  const configPath = values.config as string | undefined;
  const file = readConfigFile(
    configPath !== undefined
      ? { text: configPath, origin: "--config" }
      : env.LOCKD_CONFIG !== undefined
        ? { text: env.LOCKD_CONFIG, origin: "LOCKD_CONFIG (--config)" }
        : undefined,
    { values: Object.keys(FLAGS), booleans: ["insecure", "fast-io"], lists: ["peers"] },
    readFile,
  );
  // A boolean flag: given, or its variable ("1"/"true" turn it on, anything else off), or the file.
  const booleanFlag = (name: "insecure" | "fast-io", variable: string): { on: boolean; origin: string } => {
    if (values[name] === true) return { on: true, origin: `--${name}` };
    const fromEnv = env[variable];
    if (fromEnv !== undefined)
      return { on: fromEnv === "1" || fromEnv === "true", origin: `${variable} (--${name})` };
    return file.flag(name) ?? { on: false, origin: `--${name}` };
  };

  const setting = (name: FlagName): Setting | undefined => {
    const flag = FLAGS[name];
    const fromFlag = values[name] as string | undefined;
    if (fromFlag !== undefined) return { text: fromFlag, origin: `--${name}` };
    const fromEnv = env[flag.env];
    if (fromEnv !== undefined) return { text: fromEnv, origin: `${flag.env} (--${name})` };
    const fromFile = file.setting(name);
    if (fromFile !== undefined) return fromFile;
    return "default" in flag
      ? { text: flag.default, origin: `--${name} (default ${flag.default})` }
      : undefined;
  };
  const get = (name: FlagName): string | undefined => setting(name)?.text;
  const numberOf = (name: FlagName): number | undefined => {
    const found = setting(name);
    if (found === undefined) return undefined;
    const flag = FLAGS[name] as NumberFlag;
    return "seconds" in flag ? parseSeconds(found, flag.seconds.minMs) : parseCount(found, flag.count.min);
  };

  const hostPortOf = (found: Setting) => parseHostPort(found.text, found.origin);
  const listen = hostPortOf(setting("listen")!);
  const advertise = setting("advertise");
  if (advertise !== undefined) hostPortOf(advertise);
  const adminSetting = setting("admin");
  // An empty LOCKD_ADMIN turns the admin server off, like leaving it unset.
  const admin = adminSetting === undefined || adminSetting.text === "" ? undefined : hostPortOf(adminSetting);

  const authToken = readSecret(
    "the auth token",
    setting("auth-token-file"),
    secretFromEnv(env, "LOCKD_AUTH_TOKEN"),
    readFile,
  );
  const adminToken = readSecret(
    "the admin token",
    setting("admin-token-file"),
    secretFromEnv(env, "LOCKD_ADMIN_TOKEN"),
    readFile,
  );
  const peerToken = readSecret(
    "the peer token",
    setting("peer-token-file"),
    secretFromEnv(env, "LOCKD_PEER_TOKEN"),
    readFile,
  );
  // Every client holds the auth token, and whoever reads /metrics may hold the admin token: a peer
  // token equal to either would let them speak for a cluster node.
  if (peerToken !== undefined && (peerToken === authToken || peerToken === adminToken)) {
    throw new ConfigError(
      `the peer token must differ from the ${peerToken === authToken ? "auth" : "admin"} token: clients would hold it`,
    );
  }
  const insecure = booleanFlag("insecure", "LOCKD_INSECURE").on;
  if (!isLoopback(listen.host) && authToken === undefined && !insecure) {
    throw new ConfigError(
      `refusing to serve ${listen.host} without an auth token: set --auth-token-file (or LOCKD_AUTH_TOKEN), or pass --insecure`,
    );
  }
  // /status and /metrics describe the whole service to whoever can reach them.
  if (admin !== undefined && !isLoopback(admin.host) && adminToken === undefined && !insecure) {
    throw new ConfigError(
      `${adminSetting!.origin}: refusing to serve the admin HTTP server on ${admin.host} without an admin token: set --admin-token-file (or LOCKD_ADMIN_TOKEN), or pass --insecure`,
    );
  }

  const certPath = get("tls-cert");
  const keyPath = get("tls-key");
  if ((certPath === undefined) !== (keyPath === undefined))
    throw new ConfigError("--tls-cert and --tls-key go together");
  const tls =
    certPath && keyPath
      ? { cert: readSecretFile(certPath, readFile), key: readSecretFile(keyPath, readFile) }
      : undefined;

  const caPath = get("tls-ca");
  const tlsCa = caPath === undefined ? undefined : readSecretFile(caPath, readFile);

  const limits: Partial<Record<keyof ServerLimits, number>> = {};
  for (const [name, flag] of Object.entries(FLAGS) as Array<[FlagName, (typeof FLAGS)[FlagName]]>) {
    if (!("limit" in flag)) continue;
    const value = numberOf(name);
    if (value !== undefined) limits[flag.limit] = value;
  }
  checkLineRoom(limits, setting("max-line-bytes"), authToken);

  const peersText = get("peers");
  const peers = peersText === undefined || peersText === "" ? undefined : peersText.split(",");
  if (peers) {
    for (const peer of peers) parseHostPort(peer, setting("peers")!.origin);
    const self = advertise?.text ?? formatAddress(listen.host, listen.port);
    if (!peers.includes(self)) {
      throw new ConfigError(
        `--peers must include this node's address ${self} (set --advertise if it differs from --listen)`,
      );
    }
    if (new Set(peers).size !== peers.length) throw new ConfigError("--peers lists a node twice");
    // Without it anyone who reaches the port could join the cluster: promote, demote, or feed a replica.
    if (peerToken === undefined && !insecure) {
      throw new ConfigError(
        `${setting("peers")!.origin}: refusing to run a cluster without a peer token: set --peer-token-file (or LOCKD_PEER_TOKEN), or pass --insecure`,
      );
    }
  }
  const heartbeatMs = numberOf("heartbeat-interval")!;
  const peerTimeoutMs = numberOf("peer-timeout")!;
  // A peer timeout no longer than the heartbeat interval declares every peer dead between two heartbeats.
  if (peerTimeoutMs <= heartbeatMs) {
    throw new ConfigError(
      `${setting("peer-timeout")!.origin}: must be longer than --heartbeat-interval (${heartbeatMs / 1000} s)`,
    );
  }
  const nodeId = numberOf("node-id");
  if (nodeId !== undefined && nodeId > MAX_NODE_ID)
    throw new ConfigError(`${setting("node-id")!.origin}: must be at most ${MAX_NODE_ID}, got ${nodeId}`);
  if (nodeId === undefined && peers && peers.length > MAX_NODE_ID + 1)
    throw new ConfigError(`--peers lists more than ${MAX_NODE_ID + 1} nodes: set --node-id on each`);
  // Checked here, not left to pino: a bad level is a configuration error (status 2) naming its flag.
  const logLevel = setting("log-level")!;
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel.text)) {
    throw new ConfigError(
      `${logLevel.origin}: must be one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(logLevel.text)}`,
    );
  }
  const maxClockSkewMs = numberOf("max-clock-skew")!;
  if (maxClockSkewMs > 60_000)
    throw new ConfigError(`${setting("max-clock-skew")!.origin}: must be at most 60 s`);
  const fastIoSetting = booleanFlag("fast-io", "LOCKD_FAST_IO");
  const fastIo = fastIoSetting.on;
  // The fast paths reach Node internals through process.binding: under --throw-deprecation that
  // call would stop lockd a tick later, whatever catches it. Say so before anything is bound.
  if (fastIo && process.throwDeprecation) {
    throw new ConfigError(
      `${fastIoSetting.origin}: uses process.binding (DEP0111), which --throw-deprecation makes fatal: drop one of them`,
    );
  }

  return {
    help: false,
    version: false,
    config: {
      listen,
      advertise: advertise?.text,
      dataDir: get("data-dir")!,
      admin,
      authToken,
      peerToken,
      adminToken,
      tls,
      tlsCa,
      insecure,
      logLevel: logLevel.text,
      shutdownGraceMs: numberOf("shutdown-grace")!,
      limits,
      peers,
      heartbeatMs,
      peerTimeoutMs,
      nodeId,
      maxClockSkewMs,
      fastIo,
    },
  };
}

/**
 * `--max-line-bytes` must fit every request with a key of `--max-key-bytes`, and `H <auth token>`:
 * a smaller limit would refuse valid keys, or every authentication, as LINE_TOO_LONG.
 */
function checkLineRoom(
  limits: Partial<Record<keyof ServerLimits, number>>,
  line: Setting | undefined,
  authToken: string | undefined,
): void {
  const maxLineBytes = limits.maxLineBytes ?? DEFAULT_SERVER_LIMITS.maxLineBytes;
  const maxKeyBytes = limits.maxKeyBytes ?? DEFAULT_SERVER_LIMITS.maxKeyBytes;
  const origin = line?.origin ?? `--max-line-bytes (default ${maxLineBytes})`;
  const needed = maxKeyBytes + LINE_ROOM_AROUND_KEY;
  if (maxLineBytes < needed) {
    throw new ConfigError(
      `${origin}: must be at least ${needed} bytes (--max-key-bytes ${maxKeyBytes} + ${LINE_ROOM_AROUND_KEY}), got ${maxLineBytes}`,
    );
  }
  // "H", a space, the token and "\n". The token's length stays out of the message.
  if (authToken !== undefined && maxLineBytes < authToken.length + 3) {
    throw new ConfigError(`${origin}: too short for \`H <auth token>\``);
  }
}
