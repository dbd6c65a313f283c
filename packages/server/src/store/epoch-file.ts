import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { join } from "node:path";
import { isValidEpoch, MAX_EPOCH, parseToken } from "@lock/protocol";
import { type EpochStore, EpochStoreError } from "../epoch/epoch-store.js";
import { makeDirectory } from "./make-directory.js";

/**
 * The highest epoch this node has taken or heard of, on disk: `<data-dir>/epoch`, one JSON object
 * `{"epoch":"<decimal>"}` (the same format earlier versions wrote, when it held the node's own
 * epoch only).
 *
 * A write goes to a temporary file, is fsynced, renamed over the old one, and the directory is
 * fsynced, so after a crash the file holds either the old or the new epoch, never a torn one.
 */
export class EpochFile implements EpochStore {
  readonly path: string;
  readonly #dir: string;

  constructor(dataDir: string) {
    this.#dir = dataDir;
    this.path = join(dataDir, "epoch");
    try {
      makeDirectory(dataDir, 0o700);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      throw new EpochStoreError(
        `cannot create the data directory ${dataDir} (${code}): choose one on a disk`,
        {
          cause: error,
        },
      );
    }
  }

  get name(): string {
    return this.path;
  }

  /** The stored epoch, 0 if the file does not exist; EpochStoreError naming the file otherwise. */
  read(): bigint {
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return 0n;
      throw new EpochStoreError(
        `cannot read ${this.path} (${code ?? String(error)}): check its permissions`,
        {
          cause: error,
        },
      );
    }
    const epoch = parseEpochText(text);
    if (epoch === undefined) {
      throw new EpochStoreError(
        `${this.path} is corrupt: expected {"epoch":"<decimal 0..${MAX_EPOCH}>"}, got ${JSON.stringify(text.slice(0, 100))}. ` +
          "Restore it from a backup, or replace it with the highest epoch any node of the cluster reports (docs/operations.md)",
      );
    }
    return epoch;
  }

  write(epoch: bigint): void {
    if (!isValidEpoch(epoch)) throw new RangeError(`epoch ${epoch} is outside 0..${MAX_EPOCH}`);
    this.#writeDurably(`${JSON.stringify({ epoch: epoch.toString() })}\n`);
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

function parseEpochText(text: string): bigint | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const epoch = (parsed as { epoch?: unknown }).epoch;
  // An epoch is written as a token is: a canonical u64 decimal.
  const value = typeof epoch === "string" ? parseToken(epoch) : undefined;
  return value !== undefined && isValidEpoch(value) ? value : undefined;
}
