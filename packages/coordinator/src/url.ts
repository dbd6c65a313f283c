import { CoordinatorUrlError } from "./errors.js";
import { checkSchemaName, DEFAULT_SCHEMA } from "./postgres/schema.js";

/** The etcd key prefix unless the URL's path names one. */
export const DEFAULT_ETCD_PREFIX = "/lock/";
const DEFAULT_ETCD_PORT = 2379;

export interface EtcdTarget {
  readonly kind: "etcd";
  /** `host:port` of each member, in the URL's order. */
  readonly endpoints: readonly string[];
  readonly prefix: string;
  /** `etcds://`: HTTPS to every member. */
  readonly tls: boolean;
  readonly user: string | undefined;
  /** Paths of PEM files (`?ca=&cert=&key=`), read when the store opens. */
  readonly files: { readonly ca?: string; readonly cert?: string; readonly key?: string };
  /** The URL without credentials: safe to log. */
  readonly description: string;
}

export interface PostgresTarget {
  readonly kind: "postgres";
  /** What `pg` connects with (the URL less `schema`), credentials included if the URL had them. */
  readonly connectionString: string;
  readonly schema: string;
  readonly description: string;
}

export type CoordinatorTarget = EtcdTarget | PostgresTarget;

const ETCD_URL = /^(etcds?):\/\/(?:([^@/?#]*)@)?([^/?#]*)([^?#]*)(?:\?([^#]*))?$/;
const ENDPOINT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/;

/**
 * Reads a `--coordinator` URL: `etcd://host:port[,host:port…][/prefix]` (`etcds://` for TLS, with
 * `?ca=…&cert=…&key=…` PEM file paths, `user@` for etcd auth), or `postgres://…` /
 * `postgresql://…` (a `pg` connection string; `?schema=` names the tables' schema). Passwords come
 * from a file or the environment (openCoordinationStore), not from the URL, except that a
 * PostgreSQL URL may carry one as `pg` allows; no description ever shows one.
 */
export function parseCoordinatorUrl(url: string): CoordinatorTarget {
  const scheme = /^([a-z]+):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme === "etcd" || scheme === "etcds") return parseEtcd(url);
  if (scheme === "postgres" || scheme === "postgresql") return parsePostgres(url);
  throw new CoordinatorUrlError(
    `coordinator URL must start with etcd://, etcds://, postgres:// or postgresql:// (got ${scheme ? `${scheme}://` : "no scheme"})`,
  );
}

function parseEtcd(url: string): EtcdTarget {
  const match = ETCD_URL.exec(url);
  if (!match)
    throw new CoordinatorUrlError(
      "etcd coordinator URL is malformed: etcd://host:port[,host:port…][/prefix]",
    );
  const [, scheme, userInfo, hosts, path, query] = match;
  if (userInfo?.includes(":")) {
    throw new CoordinatorUrlError(
      "etcd coordinator URL carries a password: give it in LOCKD_COORDINATOR_PASSWORD_FILE or LOCKD_COORDINATOR_PASSWORD",
    );
  }
  const endpoints = hosts!.split(",").map((entry) => {
    const endpoint = ENDPOINT.exec(entry);
    const port = Number(endpoint?.[2] ?? DEFAULT_ETCD_PORT);
    if (!endpoint || port < 1 || port > 65535) {
      throw new CoordinatorUrlError(
        `etcd coordinator URL has a bad endpoint ${JSON.stringify(entry)} (host:port)`,
      );
    }
    return `${endpoint[1]}:${port}`;
  });
  const trimmed = decodeURIComponent(path!).replace(/\/+$/, "");
  const prefix = trimmed === "" ? DEFAULT_ETCD_PREFIX : `${trimmed}/`;
  const params = new URLSearchParams(query ?? "");
  const files: { ca?: string; cert?: string; key?: string } = {};
  for (const [name, value] of params) {
    if (name !== "ca" && name !== "cert" && name !== "key") {
      throw new CoordinatorUrlError(
        `etcd coordinator URL has an unknown parameter ${JSON.stringify(name)} (ca, cert, key)`,
      );
    }
    if (scheme === "etcd")
      throw new CoordinatorUrlError(`etcd coordinator URL sets ${name} without TLS: use etcds://`);
    files[name] = value;
  }
  if ((files.cert === undefined) !== (files.key === undefined)) {
    throw new CoordinatorUrlError("etcd coordinator URL must set both cert and key, or neither");
  }
  return {
    kind: "etcd",
    endpoints,
    prefix,
    tls: scheme === "etcds",
    user: userInfo === undefined || userInfo === "" ? undefined : decodeURIComponent(userInfo),
    files,
    description: `${scheme}://${endpoints.join(",")}${prefix}`,
  };
}

function parsePostgres(url: string): PostgresTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CoordinatorUrlError(
      "postgres coordinator URL is malformed: postgres://[user@]host[:port]/database",
    );
  }
  const schema = checkSchemaName(parsed.searchParams.get("schema") ?? DEFAULT_SCHEMA);
  parsed.searchParams.delete("schema");
  const database = parsed.pathname.replace(/^\//, "");
  if (database === "") throw new CoordinatorUrlError("postgres coordinator URL names no database");
  return {
    kind: "postgres",
    connectionString: parsed.href,
    schema,
    description: `postgres://${parsed.host}/${database}?schema=${schema}`,
  };
}
