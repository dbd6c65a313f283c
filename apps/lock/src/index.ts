export type { CommandName, Invocation, LocksCommand, RunCommand, StatusCommand } from "./args.js";
export { parseCommandLine } from "./args.js";
export type { CliIo } from "./cli.js";
export { cli } from "./cli.js";
export { formatDuration, MAX_CLI_DURATION_MS, parseDuration } from "./duration.js";
export { CliError } from "./errors.js";
export type { ExitName } from "./exit-codes.js";
export { EXIT_CODES } from "./exit-codes.js";
