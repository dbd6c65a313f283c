import { readFileSync } from "node:fs";
import { formatAddress, isValidClusterName, MAX_NODE_ID, SlotMap, SlotMapError } from "@lock/protocol";
import {
  DEFAULT_SERVER_LIMITS,
  parseSemaphoreRules,
  type SemaphoreRule,
  type ServerLimits,
} from "@lock/server";
import { ConfigError, type HostPort, isLoopback, parseHostPort } from "./address.js";
import { FLAGS, type FlagName, LINE_ROOM_AROUND_KEY, LOG_LEVELS } from "./config-flags.js";
import { ConfigSources, parseCommandLine } from "./config-sources.js";
import { type FamilyRule, parseFamilyRules } from "./key-families.js";
import { readSecret, type Setting, secretFromEnv } from "./secrets.js";
import { type KeyPair, readTlsMaterial, type TlsPaths } from "./tls-files.js";

export { usage } from "./config-flags.js";

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
  readonly tls: KeyPair | undefined;
  /** CA certificates that peers' certificates must chain to (cluster links over TLS). */
  readonly tlsCa: Buffer | undefined;
  /** With it, the admin server serves HTTPS. */
  readonly adminTls: KeyPair | undefined;
  /** Where the TLS files are: SIGHUP reads them again. */
  readonly tlsPaths: TlsPaths;
  readonly insecure: boolean;
  readonly logLevel: string;
  readonly shutdownGraceMs: number;
  readonly limits: Partial<ServerLimits>;
  /** Keys that are semaphores of a fixed number of permits, by pattern (--semaphores). */
  readonly semaphores: readonly SemaphoreRule[];
  /** `--key-families` and `--key-family-limit`: how contention metrics label keys (undefined: off). */
  readonly keyFamilies: KeyFamiliesConfig | undefined;
  /** Cluster peers, highest priority first, including this node's advertised address. */
  readonly peers: readonly string[] | undefined;
  readonly heartbeatMs: number;
  readonly peerTimeoutMs: number;
  /** The token epoch's node id (0..255); default: the position in --peers, or 0. */
  readonly nodeId: number | undefined;
  readonly maxClockSkewMs: number;
  /** `--coordinator`, with `--cluster-name` and `--coordinator-lease`; undefined without one. */
  readonly coordinator: CoordinatorConfig | undefined;
  /**
   * Socket I/O through Node internals (@lock/socket-io's fast paths): about a microsecond less per
   * request, at the price of `process.binding` (DEP0111). Off by default.
   */
  readonly fastIo: boolean;
}

export interface KeyFamiliesConfig {
  readonly rules: readonly FamilyRule[];
  readonly limit: number;
}

export interface CoordinatorConfig {
  /** The store's URL as configured (it may name a credentials file, never hold a password in a flag). */
  readonly url: string;
  /** Where the URL came from, for error messages. */
  readonly origin: string;
  readonly clusterName: string;
  readonly leaseMs: number;
  /** `--slot-map`: the map to seed the store with; this cluster then serves only its slots. */
  readonly slotMap: SlotMap | undefined;
}

export type ParsedCommand =
  | { help: true }
  | { help: false; version: true }
  | { help: false; version: false; config: LockdConfig };

export function parseConfig(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  readFile: (path: string) => Buffer = (path) => readFileSync(path),
): ParsedCommand {
  const command = parseCommandLine(argv);
  if (command.help || command.version) return command;
  const sources = new ConfigSources(command.values, env, readFile);
  // The order of the steps is the order in which a bad setting is reported.
  const addresses = parseAddresses(sources);
  const secrets = parseSecrets(sources);
  const insecure = sources.booleanFlag("insecure", "LOCKD_INSECURE").on;
  refuseExposure(addresses, secrets, insecure);
  const tls = parseTls(sources);
  const limits = parseLimits(sources, secrets.authToken);
  const cluster = parseCluster(sources, addresses, secrets.peerToken, insecure);
  const coordinator = parseCoordinator(sources, cluster.peers);
  const runtime = parseRuntime(sources);
  return {
    help: false,
    version: false,
    config: {
      listen: addresses.listen,
      advertise: addresses.advertise?.text,
      dataDir: sources.get("data-dir")!,
      admin: addresses.admin,
      ...secrets,
      ...tls,
      insecure,
      limits,
      semaphores: parseSemaphores(sources),
      keyFamilies: parseKeyFamilies(sources),
      ...cluster,
      coordinator,
      ...runtime,
    },
  };
}

interface Addresses {
  readonly listen: HostPort;
  readonly advertise: Setting | undefined;
  readonly admin: HostPort | undefined;
  readonly adminSetting: Setting | undefined;
}

/** --listen, --advertise and --admin. */
function parseAddresses(sources: ConfigSources): Addresses {
  const hostPortOf = (found: Setting) => parseHostPort(found.text, found.origin);
  const listen = hostPortOf(sources.setting("listen")!);
  const advertise = sources.setting("advertise");
  if (advertise !== undefined) hostPortOf(advertise);
  const adminSetting = sources.setting("admin");
  // An empty LOCKD_ADMIN turns the admin server off, like leaving it unset.
  const admin = adminSetting === undefined || adminSetting.text === "" ? undefined : hostPortOf(adminSetting);
  return { listen, advertise, admin, adminSetting };
}

interface Secrets {
  readonly authToken: string | undefined;
  readonly adminToken: string | undefined;
  readonly peerToken: string | undefined;
}

/** The auth, admin and peer tokens, each from its file or its variable. */
function parseSecrets(sources: ConfigSources): Secrets {
  const secret = (what: string, file: FlagName, variable: string) =>
    readSecret(what, sources.setting(file), secretFromEnv(sources.env, variable), sources.readFile);
  const authToken = secret("the auth token", "auth-token-file", "LOCKD_AUTH_TOKEN");
  const adminToken = secret("the admin token", "admin-token-file", "LOCKD_ADMIN_TOKEN");
  const peerToken = secret("the peer token", "peer-token-file", "LOCKD_PEER_TOKEN");
  // Every client holds the auth token, and whoever reads /metrics may hold the admin token: a peer
  // token equal to either would let them speak for a cluster node.
  if (peerToken !== undefined && (peerToken === authToken || peerToken === adminToken)) {
    throw new ConfigError(
      `the peer token must differ from the ${peerToken === authToken ? "auth" : "admin"} token: clients would hold it`,
    );
  }
  return { authToken, adminToken, peerToken };
}

/** Refuses a non-loopback listener, or admin server, that anyone could use without a token. */
function refuseExposure(addresses: Addresses, secrets: Secrets, insecure: boolean): void {
  const { listen, admin, adminSetting } = addresses;
  if (!isLoopback(listen.host) && secrets.authToken === undefined && !insecure) {
    throw new ConfigError(
      `refusing to serve ${listen.host} without an auth token: set --auth-token-file (or LOCKD_AUTH_TOKEN), or pass --insecure`,
    );
  }
  // /status and /metrics describe the whole service to whoever can reach them.
  if (admin !== undefined && !isLoopback(admin.host) && secrets.adminToken === undefined && !insecure) {
    throw new ConfigError(
      `${adminSetting!.origin}: refusing to serve the admin HTTP server on ${admin.host} without an admin token: set --admin-token-file (or LOCKD_ADMIN_TOKEN), or pass --insecure`,
    );
  }
}

/** --tls-cert with --tls-key, --tls-ca, and --admin-tls-cert with --admin-tls-key. */
function parseTls(sources: ConfigSources): Pick<LockdConfig, "tls" | "tlsCa" | "adminTls" | "tlsPaths"> {
  const tlsPaths: TlsPaths = {
    cert: sources.setting("tls-cert"),
    key: sources.setting("tls-key"),
    ca: sources.setting("tls-ca"),
    adminCert: sources.setting("admin-tls-cert"),
    adminKey: sources.setting("admin-tls-key"),
  };
  const material = readTlsMaterial(tlsPaths, sources.readFile);
  return { tls: material.served, tlsCa: material.ca, adminTls: material.admin, tlsPaths };
}

/** The server limits that are set (the rest keep their defaults). */
function parseLimits(sources: ConfigSources, authToken: string | undefined): Partial<ServerLimits> {
  const limits: Partial<Record<keyof ServerLimits, number>> = {};
  for (const [name, flag] of Object.entries(FLAGS) as Array<[FlagName, (typeof FLAGS)[FlagName]]>) {
    if (!("limit" in flag)) continue;
    const value = sources.numberOf(name);
    if (value !== undefined) limits[flag.limit] = value;
  }
  checkLineRoom(limits, sources.setting("max-line-bytes"), authToken);
  return limits;
}

/** --peers, the heartbeat and peer timeout, and --node-id. */
function parseCluster(
  sources: ConfigSources,
  addresses: Addresses,
  peerToken: string | undefined,
  insecure: boolean,
): Pick<LockdConfig, "peers" | "heartbeatMs" | "peerTimeoutMs" | "nodeId"> {
  const peersText = sources.get("peers");
  const peers = peersText === undefined || peersText === "" ? undefined : peersText.split(",");
  if (peers) {
    const origin = sources.setting("peers")!.origin;
    for (const peer of peers) parseHostPort(peer, origin);
    const { listen, advertise } = addresses;
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
        `${origin}: refusing to run a cluster without a peer token: set --peer-token-file (or LOCKD_PEER_TOKEN), or pass --insecure`,
      );
    }
  }
  const heartbeatMs = sources.numberOf("heartbeat-interval")!;
  const peerTimeoutMs = sources.numberOf("peer-timeout")!;
  // A peer timeout no longer than the heartbeat interval declares every peer dead between two heartbeats.
  if (peerTimeoutMs <= heartbeatMs) {
    throw new ConfigError(
      `${sources.setting("peer-timeout")!.origin}: must be longer than --heartbeat-interval (${heartbeatMs / 1000} s)`,
    );
  }
  const nodeId = sources.numberOf("node-id");
  if (nodeId !== undefined && nodeId > MAX_NODE_ID)
    throw new ConfigError(
      `${sources.setting("node-id")!.origin}: must be at most ${MAX_NODE_ID}, got ${nodeId}`,
    );
  if (nodeId === undefined && peers && peers.length > MAX_NODE_ID + 1)
    throw new ConfigError(`--peers lists more than ${MAX_NODE_ID + 1} nodes: set --node-id on each`);
  return { peers, heartbeatMs, peerTimeoutMs, nodeId };
}

/** --coordinator, --cluster-name and --coordinator-lease. */
function parseCoordinator(
  sources: ConfigSources,
  peers: readonly string[] | undefined,
): CoordinatorConfig | undefined {
  const url = sources.setting("coordinator");
  const name = sources.setting("cluster-name");
  if (url === undefined || url.text === "") {
    if (name !== undefined) throw new ConfigError(`${name.origin} needs --coordinator`);
    const slotMap = sources.setting("slot-map");
    if (slotMap !== undefined && slotMap.text !== "")
      throw new ConfigError(`${slotMap.origin} needs --coordinator`);
    return undefined;
  }
  // A one-node cluster (--peers naming only this node) may use a coordinator too.
  if (peers === undefined)
    throw new ConfigError(`${url.origin} needs --peers (one node may list only itself)`);
  if (name === undefined) throw new ConfigError(`${url.origin} needs --cluster-name`);
  if (!isValidClusterName(name.text))
    throw new ConfigError(
      `${name.origin}: letters, digits, '.', '_' or '-', at most 64, got ${JSON.stringify(name.text)}`,
    );
  // A password in a flag would be visible to every user of the machine (`ps`).
  if (/^[a-z]+:\/\/[^/@]*:[^/@]*@/i.test(url.text) && url.origin.startsWith("--"))
    throw new ConfigError(
      `${url.origin}: holds a password; put it in a file or the environment (docs/operations.md, "With a coordinator")`,
    );
  return {
    url: url.text,
    origin: url.origin,
    clusterName: name.text,
    leaseMs: sources.numberOf("coordinator-lease")!,
    slotMap: readSlotMap(sources, name.text),
  };
}

/** --slot-map: a JSON file naming every cluster (this one among them) and its slot ranges. */
function readSlotMap(sources: ConfigSources, clusterName: string): SlotMap | undefined {
  const setting = sources.setting("slot-map");
  if (setting === undefined || setting.text === "") return undefined;
  let text: string;
  try {
    text = sources.readFile(setting.text).toString("utf8");
  } catch (error) {
    throw new ConfigError(`${setting.origin}: cannot read ${setting.text}: ${(error as Error).message}`);
  }
  let map: SlotMap;
  try {
    // The store gives the map its version; 1 stands in for it until then.
    map = SlotMap.fromDocument(1n, text);
  } catch (error) {
    if (!(error instanceof SlotMapError)) throw error;
    throw new ConfigError(`${setting.origin}: ${error.code}: ${error.message}`);
  }
  if (!map.clusters.has(clusterName))
    throw new ConfigError(
      `${setting.origin}: the map does not name this cluster (--cluster-name ${clusterName})`,
    );
  return map;
}

/** --semaphores: `PATTERN=N,…`; none by default. */
function parseSemaphores(sources: ConfigSources): readonly SemaphoreRule[] {
  const setting = sources.setting("semaphores");
  if (setting === undefined || setting.text === "") return [];
  const rules = parseSemaphoreRules(setting.text);
  if ("error" in rules) throw new ConfigError(`${setting.origin}: ${rules.error}`);
  return rules;
}

/** Labels past which /metrics grows too big to scrape comfortably (3 kinds × 23 series each). */
const MAX_FAMILY_LIMIT = 10_000;

/** --key-families and --key-family-limit; a limit of 0 turns the family metrics off. */
function parseKeyFamilies(sources: ConfigSources): KeyFamiliesConfig | undefined {
  const limit = sources.numberOf("key-family-limit")!;
  if (limit > MAX_FAMILY_LIMIT)
    throw new ConfigError(
      `${sources.setting("key-family-limit")!.origin}: must be at most ${MAX_FAMILY_LIMIT}`,
    );
  const setting = sources.setting("key-families");
  let rules: readonly FamilyRule[] = [];
  if (setting !== undefined && setting.text !== "") {
    const parsed = parseFamilyRules(setting.text);
    if ("error" in parsed) throw new ConfigError(`${setting.origin}: ${parsed.error}`);
    rules = parsed;
  }
  return limit === 0 ? undefined : { rules, limit };
}

/** The log level, the clock skew allowed, the shutdown grace and the socket I/O paths. */
function parseRuntime(
  sources: ConfigSources,
): Pick<LockdConfig, "logLevel" | "maxClockSkewMs" | "shutdownGraceMs" | "fastIo"> {
  // Checked here, not left to pino: a bad level is a configuration error (status 2) naming its flag.
  const logLevel = sources.setting("log-level")!;
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel.text)) {
    throw new ConfigError(
      `${logLevel.origin}: must be one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(logLevel.text)}`,
    );
  }
  const maxClockSkewMs = sources.numberOf("max-clock-skew")!;
  if (maxClockSkewMs > 60_000)
    throw new ConfigError(`${sources.setting("max-clock-skew")!.origin}: must be at most 60 s`);
  const fastIoSetting = sources.booleanFlag("fast-io", "LOCKD_FAST_IO");
  const fastIo = fastIoSetting.on;
  // The fast paths reach Node internals through process.binding: under --throw-deprecation that
  // call would stop lockd a tick later, whatever catches it. Say so before anything is bound.
  if (fastIo && process.throwDeprecation) {
    throw new ConfigError(
      `${fastIoSetting.origin}: uses process.binding (DEP0111), which --throw-deprecation makes fatal: drop one of them`,
    );
  }
  return {
    logLevel: logLevel.text,
    maxClockSkewMs,
    shutdownGraceMs: sources.numberOf("shutdown-grace")!,
    fastIo,
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
