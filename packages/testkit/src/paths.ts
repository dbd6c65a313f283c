import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root, found from this file (src/ or dist/ of packages/testkit). */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/** The built lockd entry point. Node 20 cannot run TypeScript, so lockd runs from dist/. */
export const LOCKD_MAIN = join(REPO_ROOT, "apps", "lockd", "dist", "main.js");

/** The built `lock` CLI entry point (apps/lock). */
export const LOCK_CLI_MAIN = join(REPO_ROOT, "apps", "lock", "dist", "main.js");
