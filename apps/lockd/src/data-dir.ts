import { accessSync, constants, type Stats, statfsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { ConfigError } from "./address.js";

/**
 * Filesystems that hold no ordinary files, by the `f_type` statfs reports on Linux (linux/magic.h).
 * Under /proc, mkdir answers ENOENT although the parent exists, and Node's recursive mkdir retries
 * that forever at 100 % CPU; the others refuse or lose what lockd writes.
 */
const PSEUDO_FILESYSTEMS = new Map<number, string>([
  [0x9fa0, "proc"],
  [0x62656572, "sysfs"],
  [0x27e0eb, "cgroup"],
  [0x63677270, "cgroup2"],
  [0x64626720, "debugfs"],
  [0x74726163, "tracefs"],
  [0x73636673, "securityfs"],
  [0x6165676c, "pstore"],
  [0xcafe4a11, "bpf"],
  [0x62656570, "configfs"],
  [0x1cd1, "devpts"],
  [0xde5e81e4, "efivarfs"],
  [0x65735543, "fusectl"],
  [0x19800202, "mqueue"],
  [0x42494e4d, "binfmt_misc"],
  [0xf97cff8c, "selinuxfs"],
]);

const USE_INSTEAD = "use a directory of lockd's own on a disk, e.g. /var/lib/lockd";

/**
 * Refuses, before lockd opens it, a data directory it cannot use: a ConfigError (exit 2) naming the
 * directory and why. It holds the highest epoch lockd has taken and the lock that keeps a second
 * lockd off it, so it must be a directory (or creatable as one) on a real filesystem, writable by
 * this process and by no one else. lockd creates a missing one (mode 0700).
 */
export function checkDataDir(dir: string): void {
  const fail = (why: string): never => {
    throw new ConfigError(`data directory ${dir}: ${why}`);
  };
  const target = resolve(dir);
  const { path, stats } = nearestExisting(target, fail);
  const missing = path !== target;
  if (!stats.isDirectory()) fail(missing ? `${path} is not a directory` : "not a directory");

  const filesystem = process.platform === "linux" ? PSEUDO_FILESYSTEMS.get(statfsSync(path).type) : undefined;
  if (filesystem !== undefined) {
    fail(`on a pseudo filesystem (${filesystem}), which cannot hold lockd's files: ${USE_INSTEAD}`);
  }
  // A missing directory is created 0700; an existing one that anyone may write to (/tmp itself)
  // lets another user replace the epoch file, or hold the directory's lock and keep lockd out.
  if (!missing && (stats.mode & 0o002) !== 0) {
    const mode = (stats.mode & 0o7777).toString(8);
    fail(
      `writable by every user (mode ${mode}), so another user could replace lockd's files: ${USE_INSTEAD}`,
    );
  }
  try {
    accessSync(path, constants.W_OK | constants.X_OK);
  } catch (error) {
    const who = `this process (uid ${process.getuid?.() ?? "?"}: ${(error as NodeJS.ErrnoException).code})`;
    fail(
      missing ? `missing, and cannot create it in ${path}: not writable by ${who}` : `not writable by ${who}`,
    );
  }
}

/** `target` or its nearest ancestor that exists, with its stats. */
function nearestExisting(target: string, fail: (why: string) => never): { path: string; stats: Stats } {
  for (let path = target; ; path = dirname(path)) {
    try {
      return { path, stats: statSync(path) };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // ENOTDIR: a component is a file; walking up finds it and says so.
      if ((code !== "ENOENT" && code !== "ENOTDIR") || path === dirname(path)) {
        fail(`cannot be examined (${code ?? String(error)} at ${path})`);
      }
    }
  }
}
