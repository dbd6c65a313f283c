import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { REPO_ROOT } from "@lock/testkit";
import { beforeAll } from "vitest";
import { describeConformance } from "./suite.test.support.js";

const PACKAGE = join(REPO_ROOT, "packages", "conformance");

// The adapter runs in a Node of its own, from dist (Node 20 runs no TypeScript): build it, and
// @lock/client with it, first. Incremental, so a no-op when nothing changed.
beforeAll(() => {
  execFileSync(join(REPO_ROOT, "node_modules", ".bin", "tsc"), ["-b", PACKAGE], {
    cwd: REPO_ROOT,
    stdio: "inherit",
  });
}, 120_000);

describeConformance("@lock/client", [process.execPath, join(PACKAGE, "dist", "adapters", "lock-client.js")]);
