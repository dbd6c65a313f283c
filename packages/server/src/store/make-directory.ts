import { mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/**
 * `mkdir -p` without Node's retry loop: `fs.mkdirSync(path, { recursive: true })` spins forever at
 * 100 % CPU when mkdir answers ENOENT although the parent exists, which is what it answers for any
 * new path under /proc. Here each missing directory is tried at most twice, before and after its
 * parent is made, and the second answer is thrown as it is. New directories get `mode`.
 */
export function makeDirectory(path: string, mode: number): void {
  const target = resolve(path);
  if (made(target, mode, true)) return;
  // Ends at the root, which exists (EEXIST).
  makeDirectory(dirname(target), mode);
  made(target, mode, false);
}

/**
 * Creates `path`: true once it is a directory, false if its parent is missing and `parentMayBeMissing`;
 * any other failure is thrown.
 */
function made(path: string, mode: number, parentMayBeMissing: boolean): boolean {
  try {
    mkdirSync(path, { mode });
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" && parentMayBeMissing) return false;
    // Made by an earlier start, or by someone else meanwhile; a file there is an error.
    if (code === "EEXIST" && statSync(path).isDirectory()) return true;
    throw error;
  }
}
