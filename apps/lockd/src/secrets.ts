import { ConfigError } from "./address.js";

/** A configured value and where it came from, for error messages: a flag, or a variable and its flag. */
export interface Setting {
  readonly text: string;
  /** `--auth-token-file`, or `LOCKD_AUTH_TOKEN_FILE (--auth-token-file)`. */
  readonly origin: string;
}

/**
 * The shortest shared secret lockd accepts. With a wrong guess costing a connection and a delay, 16
 * random bytes are far out of reach; a short word is not.
 */
export const MIN_SECRET_BYTES = 16;
/** The protocol's `secret` field holds at most this much. */
const MAX_SECRET_BYTES = 1024;

/**
 * Reads a shared secret from a file or from a variable holding it, never from a flag: command lines
 * are visible to every user of the machine through `ps`. `what` names it in errors ("the auth
 * token"); errors say where the secret came from, never what it is.
 */
export function readSecret(
  what: string,
  file: Setting | undefined,
  inline: Setting | undefined,
  readFile: (path: string) => Buffer,
): string | undefined {
  if (file !== undefined && inline !== undefined) {
    throw new ConfigError(`set either ${file.origin} or ${inline.origin}, not both`);
  }
  if (file === undefined && inline === undefined) return undefined;
  const origin = file ? `${file.origin} ${file.text}` : inline!.origin;
  const raw = file ? readSecretFile(file.text, readFile).toString("utf8") : inline!.text;
  const secret = raw.trim();
  if (!/^[\x21-\x7e]*$/.test(secret) || secret.length > MAX_SECRET_BYTES) {
    throw new ConfigError(
      `${what} from ${origin} must be printable ASCII characters without spaces, at most ${MAX_SECRET_BYTES}`,
    );
  }
  if (secret.length < MIN_SECRET_BYTES) {
    throw new ConfigError(
      `${what} from ${origin} is shorter than ${MIN_SECRET_BYTES} bytes; use a random one (e.g. openssl rand -hex 32)`,
    );
  }
  return secret;
}

/** A secret held by the environment variable `name` itself, if it is set. */
export function secretFromEnv(env: NodeJS.ProcessEnv, name: string): Setting | undefined {
  const text = env[name];
  return text === undefined ? undefined : { text, origin: name };
}

/** Reads a file whose content must never be shown (a secret, a private key). */
export function readSecretFile(path: string, readFile: (path: string) => Buffer): Buffer {
  try {
    return readFile(path);
  } catch (error) {
    // The path is safe to show; the content never is.
    throw new ConfigError(
      `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
}
