/**
 * Every exit status `lock` itself produces. `lock run` otherwise exits with its command's status (a
 * command killed by a signal: 128 + the signal's number, as a shell reports it), so lock's own
 * outcomes sit where commands rarely put theirs: not 1 or 2 (every command's "failed" and "usage"),
 * not 64-78 (sysexits.h, used by mail tools, Python's os.EX_* and many daemons' wrappers), not
 * 124-127 (timeout(1) and the shell's "cannot execute" / "not found"), not 128 and up (signals,
 * ssh's 255). 80-85 is free of all of these. 126 and 127 keep their shell meaning.
 *
 * README.md and `lock --help` list every entry; a test keeps them in step.
 */
export const EXIT_CODES = {
  OK: { status: 0, meaning: "success (lock run: the command exited 0)" },
  USAGE: { status: 2, meaning: "usage error: an unknown flag, a bad value, a missing argument or setting" },
  BUSY: { status: 80, meaning: "--no-wait: the lock is held (or has waiters); the command did not run" },
  WAIT_TIMEOUT: {
    status: 81,
    meaning: "--wait ran out before the lock was granted; the command did not run",
  },
  LOCK_LOST: {
    status: 82,
    meaning:
      "the lock (--elect: leadership) was lost while the command ran (lease not renewed in time, or refused); the command was stopped",
  },
  NO_SERVER: { status: 83, meaning: "no server (or admin address) could be reached; nothing was done" },
  AUTH_FAILED: { status: 84, meaning: "a server refused the auth token, or an admin server the admin token" },
  REFUSED: {
    status: 85,
    meaning: "a server refused the request (a limit, a lease out of range) or answered something unusable",
  },
  CANNOT_EXECUTE: { status: 126, meaning: "lock run: the command exists but could not be executed" },
  NOT_FOUND: { status: 127, meaning: "lock run: the command was not found" },
} as const;

export type ExitName = keyof typeof EXIT_CODES;

/** The status for `name`. */
export function exitStatus(name: ExitName): number {
  return EXIT_CODES[name].status;
}
