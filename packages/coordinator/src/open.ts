import { readFileSync } from "node:fs";
import type { CoordinationStore } from "@lock/server";
import { CoordinatorUrlError } from "./errors.js";
import { EtcdCoordinationStore } from "./etcd/store.js";
import { PostgresCoordinationStore } from "./postgres/store.js";
import { parseCoordinatorUrl } from "./url.js";

/** The variables that hold the store's password (etcd user's, or PostgreSQL's): a file's path, or the value. */
export const PASSWORD_FILE_VARIABLE = "LOCKD_COORDINATOR_PASSWORD_FILE";
export const PASSWORD_VARIABLE = "LOCKD_COORDINATOR_PASSWORD";

/** The longest call timeout accepted: a store that answers later than this is as good as down. */
export const MAX_CALL_TIMEOUT_MS = 60_000;

export interface OpenCoordinationStoreOptions {
  /** How long one call may take before it rejects with CoordinatorUnavailableError (default 2000 ms). */
  readonly callTimeoutMs?: number | undefined;
  /**
   * The password, read by the caller (lockd reads it with its other secrets, e.g. from a
   * `--coordinator-password-file`); the variables below are then not read.
   */
  readonly password?: string | undefined;
  /** Where the password variables are read (default `process.env`). */
  readonly env?: NodeJS.ProcessEnv | undefined;
  /** How files (the password file, PEM files) are read (default `fs.readFileSync`). */
  readonly readFile?: ((path: string) => Buffer) | undefined;
}

/**
 * Opens the store a `--coordinator` URL names (parseCoordinatorUrl). Nothing connects yet: the first
 * call does, so a store that is down at start-up only makes calls reject with
 * CoordinatorUnavailableError. A bad URL, a password given twice or a file that cannot be read
 * throws CoordinatorUrlError (code COORDINATOR_BAD_URL) at once.
 */
export function openCoordinationStore(
  url: string,
  options: OpenCoordinationStoreOptions = {},
): CoordinationStore {
  const target = parseCoordinatorUrl(url);
  const timeout = options.callTimeoutMs;
  if (
    timeout !== undefined &&
    !(Number.isInteger(timeout) && timeout > 0 && timeout <= MAX_CALL_TIMEOUT_MS)
  ) {
    throw new CoordinatorUrlError(
      `callTimeoutMs must be a whole number of ms from 1 to ${MAX_CALL_TIMEOUT_MS}`,
    );
  }
  const env = options.env ?? process.env;
  const read = (what: string, path: string): Buffer => {
    try {
      return (options.readFile ?? readFileSync)(path);
    } catch (error) {
      // The path is safe to show; the content never is.
      throw new CoordinatorUrlError(
        `cannot read the ${what} ${path}: ${(error as NodeJS.ErrnoException).code ?? error}`,
      );
    }
  };
  const password = options.password ?? readPassword(env, read);
  if (target.kind === "postgres") {
    if (password !== undefined && new URL(target.connectionString).password !== "") {
      throw new CoordinatorUrlError(
        `the postgres URL carries a password: remove it, or unset ${PASSWORD_VARIABLE}(_FILE)`,
      );
    }
    return new PostgresCoordinationStore({
      connectionString: target.connectionString,
      schema: target.schema,
      password,
      callTimeoutMs: options.callTimeoutMs,
      description: target.description,
    });
  }
  if (password !== undefined && target.user === undefined) {
    throw new CoordinatorUrlError(
      `${PASSWORD_VARIABLE}(_FILE) is set but the etcd URL names no user (etcd://user@host:port)`,
    );
  }
  if (target.user !== undefined && password === undefined) {
    throw new CoordinatorUrlError(
      `the etcd URL names user ${target.user}: set ${PASSWORD_FILE_VARIABLE} or ${PASSWORD_VARIABLE}`,
    );
  }
  const { ca, cert, key } = target.files;
  return new EtcdCoordinationStore({
    endpoints: target.endpoints,
    prefix: target.prefix,
    tls: target.tls
      ? {
          ca: ca === undefined ? undefined : read("CA file", ca),
          cert: cert === undefined ? undefined : read("certificate file", cert),
          key: key === undefined ? undefined : read("key file", key),
        }
      : undefined,
    auth: target.user === undefined ? undefined : { user: target.user, password: password! },
    callTimeoutMs: options.callTimeoutMs,
    description: target.description,
  });
}

function readPassword(
  env: NodeJS.ProcessEnv,
  read: (what: string, path: string) => Buffer,
): string | undefined {
  const file = env[PASSWORD_FILE_VARIABLE];
  const inline = env[PASSWORD_VARIABLE];
  if (file !== undefined && inline !== undefined) {
    throw new CoordinatorUrlError(`set either ${PASSWORD_FILE_VARIABLE} or ${PASSWORD_VARIABLE}, not both`);
  }
  if (file !== undefined) return read("password file", file).toString("utf8").trim();
  return inline;
}
