import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { EpochStoreError } from "../epoch/epoch-store.js";
import { EpochFile } from "./epoch-file.js";

const run = promisify(execFile);
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), "epoch-file-dir-"));
  dirs.push(dir);
  return dir;
};

describe("EpochFile: its data directory", () => {
  it("creates a missing directory and its parents, mode 0700", () => {
    const dir = join(scratch(), "a", "b");
    new EpochFile(dir).write(7n);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, "..")).mode & 0o777).toBe(0o700);
  });

  it("refuses a path under a file with an EpochStoreError naming the directory", () => {
    const file = join(scratch(), "file");
    writeFileSync(file, "");
    expect(() => new EpochFile(join(file, "data"))).toThrow(EpochStoreError);
    expect(() => new EpochFile(join(file, "data"))).toThrow(
      `cannot create the data directory ${join(file, "data")}`,
    );
  });

  it("refuses a directory under /proc with an EpochStoreError instead of spinning at 100 % CPU", async () => {
    // In a process of its own (the built package): Node's recursive mkdir spins there in native code,
    // which would hang this test's worker for good. The timeout turns a spin into a failure.
    const dir = `/proc/lockd-${randomBytes(4).toString("hex")}/data`;
    const script = `import { EpochFile } from "@lock/server";
      try { new EpochFile(${JSON.stringify(dir)}); console.log("created"); }
      catch (error) { console.log(error.name + ": " + error.message); }`;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], {
      cwd: join(REPO_ROOT, "packages", "server"),
      timeout: 15_000,
    });
    expect(stdout).toMatch(new RegExp(`^EpochStoreError: cannot create the data directory ${dir} \\(ENOENT`));
  });
});
