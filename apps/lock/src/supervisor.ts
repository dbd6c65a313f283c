import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:os";
import { exitStatus } from "./exit-codes.js";

/** How the command ended: its exit code, or the signal that killed it. */
export type ChildExit =
  | { readonly kind: "exited"; readonly code: number }
  | { readonly kind: "signalled"; readonly signal: NodeJS.Signals }
  | { readonly kind: "failed"; readonly error: NodeJS.ErrnoException };

/** The signals lock passes on to the command (a terminal's Ctrl-C, a service manager's stop, a hangup). */
export const FORWARDED_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const satisfies readonly NodeJS.Signals[];

/**
 * The command lock runs under the lock, in its own process group, with lock's stdin, stdout and
 * stderr.
 *
 * Why a process group of its own: a signal sent to lock's group (Ctrl-C in a terminal) would
 * otherwise reach the command twice, once from the terminal and once forwarded by lock, and a
 * program that stops gracefully on the first SIGINT and at once on the second would never get its
 * graceful stop. And when the lock is lost, every process the command started must stop, not only
 * the one lock spawned: a helper left running would go on writing without the lock. So signals go
 * to the whole group, as a terminal's would.
 *
 * Concurrency: `exited` settles once, after the process is gone; signal() and terminate() may be
 * called at any time, before or after (a signal to a group that is gone is ignored).
 */
export class Supervisor {
  readonly exited: Promise<ChildExit>;
  readonly #child: ChildProcess;
  #killTimer: NodeJS.Timeout | undefined;

  constructor(command: readonly [string, ...string[]], env: NodeJS.ProcessEnv) {
    const [program, ...args] = command;
    // detached: setsid(), so the command leads a new process group (and session) of its own.
    this.#child = spawn(program, args, { stdio: "inherit", env, detached: true });
    this.exited = new Promise((resolve) => {
      // Without a pid the command never started (ENOENT, EACCES); an error after it started (a
      // failed kill) is not its end.
      this.#child.on("error", (error: NodeJS.ErrnoException) => {
        if (this.#child.pid === undefined) resolve({ kind: "failed", error });
      });
      this.#child.once("exit", (code, signal) => {
        resolve(signal !== null ? { kind: "signalled", signal } : { kind: "exited", code: code ?? 0 });
      });
    });
  }

  /** Sends `signal` to the command's process group. */
  signal(signal: NodeJS.Signals): void {
    const pid = this.#child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // ESRCH: the group is gone already.
    }
  }

  /**
   * Stops the command: SIGTERM to its group now, SIGKILL to the group after `killAfterMs` unless the
   * command exited by then, and SIGKILL to whatever is left in the group once it has.
   */
  terminate(killAfterMs: number): void {
    if (this.#killTimer !== undefined) return;
    this.signal("SIGTERM");
    this.#killTimer = setTimeout(() => this.signal("SIGKILL"), killAfterMs);
    void this.exited.then(() => {
      clearTimeout(this.#killTimer);
      this.signal("SIGKILL");
    });
  }
}

/** The status a shell reports for a command that ended this way (128 + n for signal n). */
export function exitStatusOf(exit: ChildExit): number {
  switch (exit.kind) {
    case "exited":
      return exit.code;
    case "signalled":
      return signalExitStatus(exit.signal);
    case "failed":
      return exitStatus(exit.error.code === "ENOENT" ? "NOT_FOUND" : "CANNOT_EXECUTE");
  }
}

/** The status of a process `signal` killed, as a shell reports it: 128 + the signal's number. */
export function signalExitStatus(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}
