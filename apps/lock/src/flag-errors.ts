import { parseDuration } from "./duration.js";
import { type CliError, usageError } from "./errors.js";

/**
 * node:util's parseArgs explains a flag without its value in words meant for programmers
 * ("Option '--wait' argument is ambiguous. Did you forget to specify the option argument…? To
 * specify an option argument starting with a dash use '--wait=-XYZ'."). This turns its errors
 * into lock's usage errors: a duration flag given `-1` is a bad duration, as `--wait=-1` is.
 * Other errors (an unknown flag) keep parseArgs's words, which name the flag.
 */
export function flagUsageError(
  error: Error & { code?: string },
  args: readonly string[],
  durationFlags: ReadonlySet<string>,
): CliError {
  const flag = /^Option '--([\w-]+)/.exec(error.message)?.[1];
  if (error.code !== "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" || flag === undefined) {
    return usageError(error.message);
  }
  if (/does not take an argument/.test(error.message)) return usageError(`--${flag} takes no value`);
  const at = args.indexOf(`--${flag}`);
  const value = at >= 0 ? args[at + 1] : undefined;
  if (value === undefined) return usageError(`--${flag} needs a value`);
  if (value.startsWith("--")) return usageError(`--${flag} needs a value, got the flag ${value}`);
  // A value that starts with a dash: for a duration that is a negative number, which is no duration.
  if (durationFlags.has(flag)) {
    try {
      parseDuration(value, `--${flag}`);
    } catch (durationError) {
      return durationError as CliError;
    }
  }
  return usageError(
    `--${flag}: ${JSON.stringify(value)} starts with a dash; write --${flag}=${value} if you mean it`,
  );
}
