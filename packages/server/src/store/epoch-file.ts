import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { join } from "node:path";

/**
 * The token epoch on disk: `<data-dir>/epoch`, one JSON object `{"epoch":"<u64>"}`.
 *
 * Taking an epoch writes the new value to a temporary file, fsyncs it, renames it over the old one
 * and fsyncs the directory, so after a crash the file holds either the old or the new epoch, never a
 * torn one. Because a node takes a fresh epoch before it issues its first token (at start, at
 * promotion), every token it issues afterwards is greater than every token issued before the crash,
 * with one fsync per epoch instead of one per grant.
 */
export class EpochFile {
  readonly path: string;
  readonly #dir: string;

  constructor(dataDir: string) {
    this.#dir = dataDir;
    this.path = join(dataDir, "epoch");
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  }

  /** The last persisted epoch, 0 if none was ever taken. */
  read(): bigint {
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0n;
      throw error;
    }
    const parsed: unknown = JSON.parse(text);
    const epoch = (parsed as { epoch?: unknown }).epoch;
    if (typeof epoch !== "string" || !/^(0|[1-9][0-9]{0,19})$/.test(epoch)) {
      throw new Error(`${this.path} is corrupt: expected {"epoch":"<decimal>"}, got ${text.slice(0, 100)}`);
    }
    return BigInt(epoch);
  }

  /**
   * Persists and returns an epoch greater than the stored one and at least `atLeast`
   * (promotion passes the highest epoch it has seen in the cluster, plus one).
   */
  takeNext(atLeast = 0n): bigint {
    const stored = this.read();
    const next = stored + 1n > atLeast ? stored + 1n : atLeast;
    this.#writeDurably(`${JSON.stringify({ epoch: next.toString() })}\n`);
    return next;
  }

  #writeDurably(content: string): void {
    const temporary = `${this.path}.tmp`;
    const fd = openSync(temporary, "w", 0o600);
    try {
      writeSync(fd, content);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, this.path);
    const dirFd = openSync(this.#dir, "r");
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  }
}
