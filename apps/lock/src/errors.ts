import { type ExitName, exitStatus } from "./exit-codes.js";

/**
 * A failure `lock` reports on stderr as `lock: <message>` and turns into its exit status. `code` is
 * the stable name of the outcome (an EXIT_CODES key, e.g. `BUSY`), for tests and for `--json` output.
 */
export class CliError extends Error {
  override readonly name = "CliError";
  readonly code: ExitName;

  constructor(code: ExitName, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  get status(): number {
    return exitStatus(this.code);
  }
}

/** A mistake on the command line or in the environment: exit status 2, before anything connects. */
export function usageError(message: string): CliError {
  return new CliError("USAGE", message);
}
