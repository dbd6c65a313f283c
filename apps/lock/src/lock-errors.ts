import {
  AuthError,
  InvalidArgumentError,
  LockLostError,
  LockServerError,
  LockTimeoutError,
  NoServerError,
  ProtocolError,
} from "@lock/client";
import { CliError } from "./errors.js";

/** The CLI outcome for an error @lock/client rejected with; anything unexpected is rethrown. */
export function cliErrorFrom(error: unknown, key: string): CliError {
  if (error instanceof CliError) return error;
  if (error instanceof LockTimeoutError)
    return new CliError("WAIT_TIMEOUT", `gave up waiting for ${key} (--wait)`, { cause: error });
  if (error instanceof NoServerError) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return new CliError("NO_SERVER", `no lockd server could be reached${cause}`, { cause: error });
  }
  if (error instanceof AuthError) return new CliError("AUTH_FAILED", error.message, { cause: error });
  if (error instanceof LockLostError) {
    return new CliError("LOCK_LOST", `${error.message}; the command did not run`, { cause: error });
  }
  if (error instanceof InvalidArgumentError) return new CliError("USAGE", error.message, { cause: error });
  if (error instanceof LockServerError || error instanceof ProtocolError) {
    return new CliError("REFUSED", error.message, { cause: error });
  }
  throw error;
}
