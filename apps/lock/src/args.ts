import { type ParseArgsConfig, parseArgs } from "node:util";
import { checkKey } from "@lock/client";
import { isValidAddress, KEY_SLOTS } from "@lock/protocol";
import { parseDuration } from "./duration.js";
import { usageError } from "./errors.js";
import { flagUsageError } from "./flag-errors.js";

/**
 * The command line and the `LOCK_*` environment, parsed without any I/O: what to do, and where the
 * secrets are (files are read later, by settings.ts). A flag wins over its variable. Throws a usage
 * error (exit status 2) for anything `lock` cannot run with.
 */

/** Where lock finds the cluster, and how it authenticates: shared by every command. */
export interface ConnectionFlags {
  /** lockd client addresses (`--servers` / `LOCK_SERVERS`); [] when none was given. */
  readonly servers: readonly string[];
  readonly authTokenFile: Source | undefined;
  readonly authToken: Source | undefined;
  /** TLS to lockd: on with `--tls`, or as soon as a CA or client certificate is given. */
  readonly tls: boolean;
  readonly tlsCaFile: string | undefined;
  readonly tlsCertFile: string | undefined;
  readonly tlsKeyFile: string | undefined;
  /** lockd admin HTTP addresses (`--admin` / `LOCK_ADMIN`); [] when none was given. */
  readonly admin: readonly string[];
  readonly adminTokenFile: Source | undefined;
  readonly adminToken: Source | undefined;
  /** How long one node may take to answer `lock status` / `lock locks`. */
  readonly timeoutMs: number;
}

/** A setting's value and where it came from (a flag, or a variable), for error messages. */
export interface Source {
  readonly value: string;
  readonly origin: string;
}

export interface RunCommand {
  readonly kind: "run";
  readonly connection: ConnectionFlags;
  readonly key: string;
  readonly leaseMs: number;
  /** undefined: wait as long as it takes; "none": --no-wait (try once). */
  readonly waitMs: number | undefined | "none";
  readonly killAfterMs: number;
  /** --shared: a shared holder; --permits N: one of N permits (LOCK_SLOT in the command's env). */
  readonly hold: { readonly mode?: "shared"; readonly permits?: number };
  /**
   * --elect: run the command only while leader of KEY (LOCK_TERM in its environment), stopping it
   * when leadership is lost; `recampaign` (--recampaign): then stand for election again instead of
   * exiting. Undefined: a plain lock run.
   */
  readonly elect?: { readonly recampaign: boolean };
  /** The command and its arguments, from after `--`. */
  readonly command: readonly [string, ...string[]];
}

export interface StatusCommand {
  readonly kind: "status";
  readonly connection: ConnectionFlags;
  readonly json: boolean;
}

export interface LocksCommand {
  readonly kind: "locks";
  readonly connection: ConnectionFlags;
  readonly json: boolean;
  readonly prefix: string;
  readonly limit: number;
}

/** `lock slots` (the map), or `lock slots move FROM[-TO] --to CLUSTER` (begin a move, wait for its commit). */
export interface SlotsCommand {
  readonly kind: "slots";
  readonly connection: ConnectionFlags;
  readonly json: boolean;
  readonly move?: {
    readonly from: number;
    readonly to: number;
    readonly target: string;
    /** undefined: until it commits; "none": --no-wait (return once begun). */
    readonly waitMs: number | undefined | "none";
  };
}

export type Invocation =
  | { readonly kind: "help"; readonly command: CommandName | undefined }
  | { readonly kind: "version" }
  | RunCommand
  | StatusCommand
  | LocksCommand
  | SlotsCommand;

export const COMMANDS = ["run", "status", "locks", "slots"] as const;
export type CommandName = (typeof COMMANDS)[number];

export const DEFAULTS = Object.freeze({
  servers: "127.0.0.1:7420",
  leaseMs: 30_000,
  killAfterMs: 5_000,
  timeoutMs: 3_000,
  limit: 100,
});
/** `lock locks --limit` at most (the admin endpoint pages at most 1000 at a time; lock follows the pages). */
export const MAX_LIMIT = 1_000_000;
/**
 * The shortest `lock run --lease`. lockd takes 1 ms, but lock run must keep the lease while the
 * command runs: the client renews it when a third has gone by and retries every 200 ms in the two
 * thirds left, and a grant that arrives with less than two thirds left is renewed before the command
 * starts. Below a second a round trip or two (or a garbage-collection pause) loses the lock before
 * the command even starts, which lock would report as a lost lock (exit 82) rather than as the usage
 * mistake it is.
 */
export const MIN_RUN_LEASE_MS = 1_000;
/** The flags whose value is a duration (500ms, 30s, 2m). */
export const DURATION_FLAGS: ReadonlySet<string> = new Set(["lease", "wait", "kill-after", "timeout"]);

/** Every flag: its environment variable, which commands take it, and its help line. */
export const FLAGS = {
  servers: {
    type: "string",
    env: "LOCK_SERVERS",
    for: "all",
    help: "comma-separated lockd host:port (default 127.0.0.1:7420)",
  },
  "auth-token-file": {
    type: "string",
    env: "LOCK_AUTH_TOKEN_FILE",
    for: "all",
    help: "file with the auth token (or the token itself in LOCK_AUTH_TOKEN)",
  },
  tls: {
    type: "boolean",
    env: "LOCK_TLS",
    for: "all",
    help: "connect to lockd over TLS, trusting the system CAs (LOCK_TLS=1)",
  },
  "tls-ca-file": {
    type: "string",
    env: "LOCK_TLS_CA_FILE",
    for: "all",
    help: "PEM CA bundle lockd's certificate must chain to (implies --tls)",
  },
  "tls-cert-file": {
    type: "string",
    env: "LOCK_TLS_CERT_FILE",
    for: "all",
    help: "PEM client certificate (implies --tls; with --tls-key-file)",
  },
  "tls-key-file": {
    type: "string",
    env: "LOCK_TLS_KEY_FILE",
    for: "all",
    help: "PEM client private key (implies --tls; with --tls-cert-file)",
  },
  admin: {
    type: "string",
    env: "LOCK_ADMIN",
    for: ["status", "locks", "slots"],
    help: "comma-separated lockd admin server host:port (https://host:port for HTTPS)",
  },
  "admin-token-file": {
    type: "string",
    env: "LOCK_ADMIN_TOKEN_FILE",
    for: ["status", "locks", "slots"],
    help: "file with the admin bearer token (or the token itself in LOCK_ADMIN_TOKEN)",
  },
  timeout: {
    type: "string",
    env: undefined,
    for: ["status", "locks", "slots"],
    help: "how long each node may take to answer (default 3s)",
  },
  json: {
    type: "boolean",
    env: undefined,
    for: ["status", "locks", "slots"],
    help: "print JSON instead of a table",
  },
  lease: {
    type: "string",
    env: undefined,
    for: ["run"],
    help: "lease, renewed while the command runs (default 30s, at least 1s)",
  },
  wait: {
    type: "string",
    env: undefined,
    for: ["run", "slots"],
    help: "give up after waiting this long for the lock (also while lockd restarts), or for a slot move to commit (default: as long as it takes)",
  },
  "no-wait": {
    type: "boolean",
    env: undefined,
    for: ["run", "slots"],
    help: "do not wait: exit 80 at once if the lock is held; return once a slot move is begun",
  },
  to: {
    type: "string",
    env: undefined,
    for: ["slots"],
    help: "lock slots move: the cluster the slots go to",
  },
  shared: {
    type: "boolean",
    env: undefined,
    for: ["run"],
    help: "hold the key shared: any number of --shared holders at once, never beside an exclusive one",
  },
  permits: {
    type: "string",
    env: undefined,
    for: ["run"],
    help: "hold one of N permits of a semaphore on the key (1-65535); LOCK_SLOT tells which",
  },
  "kill-after": {
    type: "string",
    env: undefined,
    for: ["run"],
    help: "after a lost lock, SIGKILL the command this long after SIGTERM (default 5s)",
  },
  elect: {
    type: "boolean",
    env: undefined,
    for: ["run"],
    help: "leader election: wait to be elected leader of KEY, run the command while leader (LOCK_TERM), stop it on loss",
  },
  recampaign: {
    type: "boolean",
    env: undefined,
    for: ["run"],
    help: "with --elect: after leadership is lost and the command stopped, stand for election again (default: exit 82)",
  },
  prefix: { type: "string", env: undefined, for: ["locks"], help: "only keys that start with this" },
  limit: {
    type: "string",
    env: undefined,
    for: ["locks"],
    help: `show at most this many keys (default 100, at most ${MAX_LIMIT})`,
  },
  help: { type: "boolean", env: undefined, for: "all", help: "print this help" },
  version: { type: "boolean", env: undefined, for: "all", help: "print the version" },
} as const satisfies Record<
  string,
  { type: "string" | "boolean"; env: string | undefined; for: "all" | readonly CommandName[]; help: string }
>;

type FlagName = keyof typeof FLAGS;
type Values = { [name in FlagName]?: (typeof FLAGS)[name]["type"] extends "string" ? string : boolean };

const PARSE_OPTIONS = Object.fromEntries(
  Object.entries(FLAGS).map(([name, flag]) => [name, { type: flag.type }]),
) as NonNullable<ParseArgsConfig["options"]>;

/** Parses `argv` (without node and the script) and `env` into what to do. */
export function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv): Invocation {
  // Everything after the first `--` is the command lock run starts, untouched.
  const separator = argv.indexOf("--");
  const own = separator < 0 ? argv : argv.slice(0, separator);
  const command = separator < 0 ? undefined : argv.slice(separator + 1);
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...own], options: PARSE_OPTIONS, allowPositionals: true, strict: true }) as {
      values: Values;
      positionals: string[];
    };
  } catch (error) {
    // parseArgs's messages name the flag ("Unknown option '--leese'"); its error code is not for users.
    throw flagUsageError(error as Error, own, DURATION_FLAGS);
  }
  const { values, positionals } = parsed;
  const [name, ...rest] = positionals;
  if (name !== undefined && !isCommand(name)) {
    throw usageError(`unknown command ${JSON.stringify(name)}; commands: ${COMMANDS.join(", ")}`);
  }
  if (values.help) return { kind: "help", command: name };
  if (values.version) return { kind: "version" };
  if (name === undefined) throw usageError(`a command is missing; commands: ${COMMANDS.join(", ")}`);
  for (const flag of Object.keys(values) as FlagName[]) {
    const takers = FLAGS[flag].for;
    if (takers !== "all" && !(takers as readonly string[]).includes(name)) {
      throw usageError(`--${flag} is not a flag of lock ${name}`);
    }
  }
  if (name !== "run" && command !== undefined) throw usageError(`lock ${name} takes no command after --`);
  const connection = connectionFlags(values, env);
  switch (name) {
    case "run":
      return runCommand(values, rest, command, connection);
    case "status":
      if (rest.length > 0) throw usageError(`lock status takes no arguments, got ${JSON.stringify(rest[0])}`);
      return { kind: "status", connection, json: values.json === true };
    case "locks": {
      if (rest.length > 0) throw usageError(`lock locks takes no arguments, got ${JSON.stringify(rest[0])}`);
      if (connection.admin.length === 0) {
        throw usageError("lock locks reads lockd's admin server: give --admin host:port (or LOCK_ADMIN)");
      }
      return {
        kind: "locks",
        connection,
        json: values.json === true,
        prefix: values.prefix ?? "",
        limit: values.limit === undefined ? DEFAULTS.limit : parseLimit(values.limit),
      };
    }
    case "slots":
      return slotsCommand(values, rest, connection);
  }
}

function slotsCommand(values: Values, rest: readonly string[], connection: ConnectionFlags): SlotsCommand {
  if (connection.admin.length === 0)
    throw usageError("lock slots reads lockd's admin server: give --admin host:port (or LOCK_ADMIN)");
  const json = values.json === true;
  const [verb, range, ...extra] = rest;
  if (verb === undefined) {
    if (values.to !== undefined || values.wait !== undefined || values["no-wait"])
      throw usageError("--to, --wait and --no-wait are for lock slots move");
    return { kind: "slots", connection, json };
  }
  if (verb !== "move") throw usageError(`lock slots takes nothing or move, got ${JSON.stringify(verb)}`);
  if (range === undefined || extra.length > 0)
    throw usageError("lock slots move takes one range: lock slots move FROM[-TO] --to CLUSTER");
  const match = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(range);
  const from = Number(match?.[1]);
  const to = match?.[2] === undefined ? from : Number(match[2]);
  if (match === null || from > to || to >= KEY_SLOTS)
    throw usageError(
      `lock slots move: expected slots FROM[-TO] from 0 to ${KEY_SLOTS - 1}, got ${JSON.stringify(range)}`,
    );
  if (values.to === undefined) throw usageError("lock slots move needs --to CLUSTER");
  if (values["no-wait"] && values.wait !== undefined) throw usageError("give --wait or --no-wait, not both");
  let waitMs: number | undefined | "none";
  if (values["no-wait"]) waitMs = "none";
  else if (values.wait !== undefined) {
    waitMs = parseDuration(values.wait, "--wait");
    if (waitMs === 0) throw usageError("--wait must be more than 0 (--no-wait does not wait)");
  }
  return { kind: "slots", connection, json, move: { from, to, target: values.to, waitMs } };
}

function isCommand(name: string): name is CommandName {
  return (COMMANDS as readonly string[]).includes(name);
}

function runCommand(
  values: Values,
  rest: readonly string[],
  command: readonly string[] | undefined,
  connection: ConnectionFlags,
): RunCommand {
  const [key, ...extra] = rest;
  if (key === undefined) throw usageError("lock run needs a KEY: lock run KEY -- command [args...]");
  if (extra.length > 0 || command === undefined) {
    throw usageError("put the command after --: lock run KEY [flags] -- command [args...]");
  }
  const [program, ...args] = command;
  if (program === undefined || program === "") throw usageError("no command after --");
  try {
    // lockd decides the longest key (--max-key-bytes); the rest is the protocol's.
    checkKey(key, Number.MAX_SAFE_INTEGER);
  } catch (error) {
    // The client says `key "a b" contains …`; on lock's command line the argument is KEY.
    throw usageError((error as Error).message.replace(/^key\b/, "KEY"));
  }
  if (values["no-wait"] && values.wait !== undefined) throw usageError("give --wait or --no-wait, not both");
  const leaseMs = values.lease === undefined ? DEFAULTS.leaseMs : parseDuration(values.lease, "--lease");
  if (leaseMs < MIN_RUN_LEASE_MS) {
    throw usageError(
      `--lease must be at least 1s (got ${values.lease}): lock renews the lease while the command runs and needs the time for it`,
    );
  }
  let waitMs: RunCommand["waitMs"];
  if (values["no-wait"]) waitMs = "none";
  else if (values.wait !== undefined) {
    waitMs = parseDuration(values.wait, "--wait");
    // The protocol's wait 0 means "forever": let no one get that by accident.
    if (waitMs === 0) throw usageError("--wait must be more than 0 (--no-wait does not wait)");
  }
  const killAfterMs =
    values["kill-after"] === undefined
      ? DEFAULTS.killAfterMs
      : parseDuration(values["kill-after"], "--kill-after");
  const hold = holdFlags(values);
  const elect = electFlags(values, waitMs, hold);
  return {
    kind: "run",
    connection,
    key,
    leaseMs,
    waitMs,
    killAfterMs,
    hold,
    ...(elect === undefined ? {} : { elect }),
    command: [program, ...args],
  };
}

/** --elect [--recampaign]: a leader holds its key alone and waits for it. */
function electFlags(
  values: Values,
  waitMs: RunCommand["waitMs"],
  hold: RunCommand["hold"],
): RunCommand["elect"] {
  if (!values.elect) {
    if (values.recampaign) throw usageError("--recampaign is for lock run --elect");
    return undefined;
  }
  if (hold.mode !== undefined || hold.permits !== undefined)
    throw usageError("--elect holds KEY alone: not with --shared or --permits");
  if (waitMs === "none")
    throw usageError("--elect campaigns until elected (or --wait runs out): not with --no-wait");
  return { recampaign: values.recampaign === true };
}

/** --shared or --permits N (not both). */
function holdFlags(values: Values): RunCommand["hold"] {
  if (values.shared && values.permits !== undefined) throw usageError("give --shared or --permits, not both");
  if (values.shared) return { mode: "shared" };
  if (values.permits === undefined) return {};
  if (!/^[1-9][0-9]{0,4}$/.test(values.permits) || Number(values.permits) > 65_535)
    throw usageError(`--permits must be a whole number from 1 to 65535 (got ${values.permits})`);
  return { permits: Number(values.permits) };
}

function connectionFlags(values: Values, env: NodeJS.ProcessEnv): ConnectionFlags {
  const setting = (
    flag: "servers" | "admin" | "tls-ca-file" | "tls-cert-file" | "tls-key-file",
  ): string | undefined => values[flag] ?? nonEmpty(env[FLAGS[flag].env]);
  const servers = addressList(setting("servers"), "--servers (LOCK_SERVERS)");
  const admin = addressList(setting("admin"), "--admin (LOCK_ADMIN)", true);
  const tlsCaFile = setting("tls-ca-file");
  const tlsCertFile = setting("tls-cert-file");
  const tlsKeyFile = setting("tls-key-file");
  if ((tlsCertFile === undefined) !== (tlsKeyFile === undefined)) {
    throw usageError(
      "give both --tls-cert-file and --tls-key-file (LOCK_TLS_CERT_FILE, LOCK_TLS_KEY_FILE), or neither",
    );
  }
  const tlsEnv = env.LOCK_TLS;
  if (tlsEnv !== undefined && !["", "0", "1", "true", "false"].includes(tlsEnv)) {
    throw usageError(`LOCK_TLS must be 1 or 0, got ${JSON.stringify(tlsEnv)}`);
  }
  const tls =
    values.tls === true ||
    tlsEnv === "1" ||
    tlsEnv === "true" ||
    tlsCaFile !== undefined ||
    tlsCertFile !== undefined;
  let timeoutMs: number = DEFAULTS.timeoutMs;
  if (values.timeout !== undefined) {
    timeoutMs = parseDuration(values.timeout, "--timeout");
    if (timeoutMs === 0) throw usageError("--timeout must be more than 0");
  }
  return {
    servers,
    authTokenFile: flagOrEnv(values["auth-token-file"], "--auth-token-file", env, "LOCK_AUTH_TOKEN_FILE"),
    authToken: fromEnv(env, "LOCK_AUTH_TOKEN"),
    tls,
    tlsCaFile,
    tlsCertFile,
    tlsKeyFile,
    admin,
    adminTokenFile: flagOrEnv(values["admin-token-file"], "--admin-token-file", env, "LOCK_ADMIN_TOKEN_FILE"),
    adminToken: fromEnv(env, "LOCK_ADMIN_TOKEN"),
    timeoutMs,
  };
}

function flagOrEnv(
  flag: string | undefined,
  flagName: string,
  env: NodeJS.ProcessEnv,
  variable: string,
): Source | undefined {
  if (flag !== undefined) return { value: flag, origin: flagName };
  return fromEnv(env, variable);
}

function fromEnv(env: NodeJS.ProcessEnv, variable: string): Source | undefined {
  const value = nonEmpty(env[variable]);
  return value === undefined ? undefined : { value, origin: variable };
}

/** An empty variable counts as unset, as `LOCK_SERVERS= lock status` means in a shell. */
function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/** `host:port` entries; with `schemes`, each may start with `http://` or `https://` (admin servers). */
function addressList(text: string | undefined, what: string, schemes = false): string[] {
  if (text === undefined) return [];
  const addresses = text.split(",").map((address) => address.trim());
  for (const address of addresses) {
    const hostPort = schemes ? address.replace(/^https?:\/\//i, "").replace(/\/$/, "") : address;
    if (!isValidAddress(hostPort))
      throw usageError(
        `${what}: expected ${schemes ? "[https://]host:port" : "host:port"}, got ${JSON.stringify(address)}`,
      );
  }
  return addresses;
}

function parseLimit(text: string): number {
  const limit = /^\d{1,7}$/.test(text) ? Number(text) : Number.NaN;
  if (!(limit >= 1 && limit <= MAX_LIMIT)) {
    throw usageError(`--limit: expected a whole number from 1 to ${MAX_LIMIT}, got ${JSON.stringify(text)}`);
  }
  return limit;
}
