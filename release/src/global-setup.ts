import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "@lock/testkit";
import type { TestProject } from "vitest/node";
import { type PackedPackage, packAll } from "./pack.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Every published package, packed once for all test files. */
    packed: PackedPackage[];
  }
}

/**
 * Builds every project (`tsc -b` at the root: the tarballs carry dist/, the scratch app runs the
 * built lockd) and packs the published packages into a temporary folder, removed afterwards.
 */
export default function setup(project: TestProject): () => void {
  execFileSync(join(REPO_ROOT, "node_modules", ".bin", "tsc"), ["-b"], { cwd: REPO_ROOT, stdio: "inherit" });
  const destination = mkdtempSync(join(tmpdir(), "lock-tarballs-"));
  project.provide("packed", packAll(destination));
  return () => rmSync(destination, { recursive: true, force: true });
}
