import { CoordinatorUnavailableError } from "@lock/server";

export { CoordinatorUnavailableError };

/** Every code this package's errors carry (README.md documents each one; a test checks). */
export const COORDINATOR_ERROR_CODES = ["COORDINATOR_UNAVAILABLE", "COORDINATOR_BAD_URL"] as const;

/** A `--coordinator` URL (or an option beside it) that cannot be used; the message says why, never a secret. */
export class CoordinatorUrlError extends Error {
  readonly code = "COORDINATOR_BAD_URL";
  override readonly name = "CoordinatorUrlError";
}

/**
 * Turns whatever a backend threw (a socket error, a server error, a timeout) into the one error the
 * contract allows, keeping the original as `cause` for logs.
 */
export function unavailable(description: string, what: string, cause: unknown): CoordinatorUnavailableError {
  if (cause instanceof CoordinatorUnavailableError) return cause;
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new CoordinatorUnavailableError(`${description}: ${what} failed: ${reason}`, { cause });
}
