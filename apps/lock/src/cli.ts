import { parseCommandLine } from "./args.js";
import { runWhileLeader } from "./elect-run.js";
import { CliError } from "./errors.js";
import { helpText } from "./help.js";
import { listLocks } from "./locks.js";
import { runUnderLock } from "./run.js";
import { loadSettings, type ReadFile } from "./settings.js";
import { slots } from "./slots.js";
import { showStatus } from "./status.js";

export interface CliIo {
  readonly env: NodeJS.ProcessEnv;
  readonly version: string;
  readonly stdout: (text: string) => void;
  /** One of lock's own messages, without its newline. */
  readonly stderr: (line: string) => void;
  readonly readFile: ReadFile;
}

/** Runs `lock` with `argv` (without node and the script) and resolves with its exit status. */
export async function cli(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const invocation = parseCommandLine(argv, io.env);
    switch (invocation.kind) {
      case "help":
        io.stdout(`${helpText(invocation.command)}\n`);
        return 0;
      case "version":
        io.stdout(`${io.version}\n`);
        return 0;
      case "run": {
        const run = invocation.elect === undefined ? runUnderLock : runWhileLeader;
        return await run(invocation, loadSettings(invocation.connection, io.readFile), io);
      }
      case "status":
        return await showStatus(invocation, loadSettings(invocation.connection, io.readFile), io);
      case "locks":
        return await listLocks(invocation, loadSettings(invocation.connection, io.readFile), io);
      case "slots":
        return await slots(invocation, loadSettings(invocation.connection, io.readFile), io);
    }
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    io.stderr(`lock: ${error.message}`);
    if (error.code === "USAGE") io.stderr("run lock --help for usage");
    return error.status;
  }
}
