import type { ConnectionOptions } from "node:tls";
import type { LockClientOptions } from "@lock/client";
import { isValidSecret } from "@lock/protocol";
import { type ConnectionFlags, DEFAULTS, type Source } from "./args.js";
import { usageError } from "./errors.js";

export type ReadFile = (path: string) => Buffer;

/** What the commands connect with, once the files the flags name have been read. */
export interface Settings {
  /** For `new LockClient(…)` and the `I` probes. `servers` is [] when none was given. */
  readonly client: LockClientOptions;
  /** The TLS options in `client`, for connections lock opens itself (the `I` probes). */
  readonly tls: ConnectionOptions | undefined;
  /** True when neither --servers nor LOCK_SERVERS was given (lock run then uses 127.0.0.1:7420). */
  readonly serversDefaulted: boolean;
  readonly admin: readonly string[];
  readonly adminToken: string | undefined;
  readonly timeoutMs: number;
}

/**
 * Reads the secrets and certificates the flags point at. A secret comes from a file or from a
 * variable holding it, never from a flag (command lines show in `ps`); errors name where it came
 * from, never what it is. Surrounding white space is trimmed (a file written by `echo` ends in a
 * newline). lockd checks the token's length itself: the CLI only refuses what cannot be sent.
 */
export function loadSettings(flags: ConnectionFlags, readFile: ReadFile): Settings {
  const authToken = readSecret("the auth token", flags.authTokenFile, flags.authToken, readFile);
  const adminToken = readSecret("the admin token", flags.adminTokenFile, flags.adminToken, readFile);
  let tls: ConnectionOptions | undefined;
  if (flags.tls) {
    tls = {
      ...(flags.tlsCaFile !== undefined ? { ca: read(flags.tlsCaFile, "--tls-ca-file", readFile) } : {}),
      ...(flags.tlsCertFile !== undefined
        ? { cert: read(flags.tlsCertFile, "--tls-cert-file", readFile) }
        : {}),
      ...(flags.tlsKeyFile !== undefined ? { key: read(flags.tlsKeyFile, "--tls-key-file", readFile) } : {}),
    };
  }
  const serversDefaulted = flags.servers.length === 0;
  return {
    client: {
      servers: serversDefaulted ? [DEFAULTS.servers] : flags.servers,
      ...(authToken !== undefined ? { authToken } : {}),
      ...(tls !== undefined ? { tls } : {}),
    },
    tls,
    serversDefaulted,
    admin: flags.admin,
    adminToken,
    timeoutMs: flags.timeoutMs,
  };
}

function readSecret(
  what: string,
  file: Source | undefined,
  inline: Source | undefined,
  readFile: ReadFile,
): string | undefined {
  if (file !== undefined && inline !== undefined) {
    throw usageError(`set either ${file.origin} or ${inline.origin}, not both`);
  }
  if (file === undefined && inline === undefined) return undefined;
  const origin = file ? `${file.origin} ${file.value}` : inline!.origin;
  const secret = (file ? read(file.value, file.origin, readFile).toString("utf8") : inline!.value).trim();
  if (!isValidSecret(secret)) {
    throw usageError(`${what} from ${origin} must be 1-1024 printable ASCII characters without spaces`);
  }
  return secret;
}

function read(path: string, flag: string, readFile: ReadFile): Buffer {
  try {
    return readFile(path);
  } catch (error) {
    // The path is safe to show; the content (a secret, a private key) never is.
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw usageError(`${flag}: cannot read ${path}: ${reason}`);
  }
}
