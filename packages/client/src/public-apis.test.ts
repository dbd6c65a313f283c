import { execFile, execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { LockdProcess, REPO_ROOT } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const PACKAGE_DIR = join(REPO_ROOT, "packages", "client");

// What an application does with the client: import it, take a lock, let it go, exit. Run from the
// package's directory, `@lock/client` resolves to the package itself (its built dist/), as it would
// from an application's node_modules.
const APPLICATION = `
const { LockClient } = await import("@lock/client");
const client = new LockClient({ servers: [process.env.LOCKD_ADDRESS] });
const lock = await client.acquire("public-apis:check", { leaseMs: 10_000 });
const released = await lock.release();
await client.close();
console.log(released ? "released" : "not released");
`;

/** Runs `script` as an ES module in a fresh Node with `flags`; its exit code and output. */
function runNode(
  flags: readonly string[],
  script: string,
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...flags, "--input-type=module", "-e", script],
      { cwd: PACKAGE_DIR, env: { PATH: process.env.PATH ?? "", ...env } },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/**
 * The client is a library: whatever flags the application runs Node with, importing and using it
 * must not depend on Node internals (`process.binding`, `_handle`), which Node deprecates, moves and
 * removes between versions.
 */
describe("only public Node APIs", () => {
  let lockd: LockdProcess;

  beforeAll(async () => {
    // The child process runs the built client, not the source the other tests use.
    execFileSync(join(REPO_ROOT, "node_modules", ".bin", "tsc"), ["-b", PACKAGE_DIR], {
      cwd: REPO_ROOT,
      stdio: "inherit",
    });
    lockd = await LockdProcess.start();
  }, 120_000);
  afterAll(async () => {
    await lockd?.dispose();
  });

  it("an application under --pending-deprecation --throw-deprecation imports, acquires, releases and exits 0", async () => {
    const run = await runNode(["--pending-deprecation", "--throw-deprecation"], APPLICATION, {
      LOCKD_ADDRESS: lockd.address,
    });
    expect(run.stderr).toBe("");
    expect(run.stdout).toBe("released\n");
    expect(run.code).toBe(0);
  });

  it("neither the client's sources nor its workspace dependencies' name process.binding or socket handles", () => {
    const manifest = JSON.parse(readFileSync(join(PACKAGE_DIR, "package.json"), "utf8")) as {
      dependencies?: Record<string, string>;
    };
    const packages = ["client"];
    for (const name of Object.keys(manifest.dependencies ?? {})) {
      if (name.startsWith("@lock/")) packages.push(name.slice("@lock/".length));
    }
    const offenders: string[] = [];
    for (const name of packages) {
      const sourceDir = join(REPO_ROOT, "packages", name, "src");
      for (const file of readdirSync(sourceDir)) {
        if (!file.endsWith(".ts") || file.includes(".test")) continue;
        const text = readFileSync(join(sourceDir, file), "utf8");
        if (/process\.binding|internalBinding|\b_handle\b/.test(text)) offenders.push(`${name}/src/${file}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
