import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";

/**
 * An exclusive `<data-dir>/lockd.pid` lock: two lockd processes on one data directory would take
 * epochs from the same file and could issue equal tokens. A lock left by a dead process (its pid
 * no longer exists) is taken over.
 */
export class DataDirLock {
  readonly #path: string;
  #held = false;

  private constructor(path: string) {
    this.#path = path;
  }

  static acquire(dataDir: string): DataDirLock {
    const lock = new DataDirLock(join(dataDir, "lockd.pid"));
    lock.#take();
    return lock;
  }

  release(): void {
    if (!this.#held) return;
    this.#held = false;
    try {
      unlinkSync(this.#path);
    } catch {
      // Already gone: nothing to release.
    }
  }

  #take(): void {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(this.#path, "wx", 0o600);
        writeSync(fd, `${process.pid}\n`);
        closeSync(fd);
        this.#held = true;
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        const owner = Number.parseInt(readFileSync(this.#path, "utf8"), 10);
        if (Number.isInteger(owner) && owner !== process.pid && isAlive(owner)) {
          throw new Error(`data directory is in use by lockd pid ${owner} (${this.#path})`);
        }
        unlinkSync(this.#path);
      }
    }
    throw new Error(`could not lock ${this.#path}`);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
