import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LOCKD_MAIN, LockdProcess } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";

/**
 * lockd refuses, at start, a data directory it cannot use (exit 2, naming it and why), instead of
 * spinning at 100 % CPU (under /proc) or trusting a directory every local user can write to (/tmp).
 * Real lockd processes.
 */
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function scratchDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "lockd-data-dir-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface Outcome {
  code: number | null;
  stderr: string;
}

/**
 * Runs lockd with `--data-dir dir` until it exits. A lockd that starts despite a bad directory, or
 * spins, is killed by the timeout and the test fails on its exit status (null), not by hanging.
 */
function runLockd(dir: string, { env = {}, uid }: { env?: Record<string, string>; uid?: number } = {}) {
  const args = [LOCKD_MAIN, "--listen", "127.0.0.1:0", ...(dir === "" ? [] : ["--data-dir", dir])];
  return new Promise<Outcome>((resolve) => {
    execFile(
      process.execPath,
      args,
      {
        env: { PATH: process.env.PATH ?? "", ...env },
        timeout: 15_000,
        ...(uid === undefined ? {} : { uid }),
      },
      (error, _stdout, stderr) =>
        resolve({ code: error ? (error.killed ? null : Number(error.code)) : 0, stderr }),
    );
  });
}

/** Whether uid 65534 can run this node on lockd's main file (every parent directory open to it). */
function runsAsNobody(): Promise<boolean> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      ["-e", "require('node:fs').accessSync(process.argv[1])", LOCKD_MAIN],
      { uid: 65534 },
      (error) => resolve(error === null),
    ),
  );
}

async function expectRefused(dir: string, why: RegExp, options?: Parameters<typeof runLockd>[1]) {
  const { code, stderr } = await runLockd(dir, options);
  expect({ code, stderr }).toEqual({ code: 2, stderr: expect.stringContaining(`data directory ${dir}`) });
  expect(stderr).toMatch(why);
}

describe("lockd --data-dir", () => {
  it("refuses a directory under /proc (a pseudo filesystem) instead of spinning", async () => {
    await expectRefused(`/proc/lockd-${randomBytes(4).toString("hex")}`, /pseudo filesystem \(proc\)/);
    await expectRefused("/proc", /pseudo filesystem \(proc\)/);
  });

  it("refuses a directory under /sys (a pseudo filesystem)", async () => {
    await expectRefused(`/sys/kernel/lockd-${randomBytes(4).toString("hex")}`, /pseudo filesystem \(sysfs\)/);
  });

  it("refuses /tmp itself, and any directory every user may write to", async () => {
    await expectRefused("/tmp", /writable by every user/);
    const shared = scratchDir();
    chmodSync(shared, 0o777);
    await expectRefused(shared, /writable by every user/);
  });

  it("refuses a file, and a path under a file", async () => {
    const file = join(scratchDir(), "file");
    writeFileSync(file, "not a directory");
    await expectRefused(file, /not a directory/);
    await expectRefused(join(file, "lockd"), new RegExp(`${file} is not a directory`));
  });

  it("refuses a directory it cannot write to", async (ctx) => {
    const dir = scratchDir();
    if (process.getuid?.() === 0) {
      // A checkout under a directory closed to other users (`mktemp -d` makes one) cannot run lockd
      // as nobody at all: then there is nothing to test here, and the test says why it skipped.
      if (!(await runsAsNobody())) {
        ctx.skip(
          "uid 65534 cannot run node or lockd from this checkout (a parent directory is closed to it)",
        );
        return;
      }
      // Root writes anywhere: run lockd as nobody, who may look into the root-owned directory but
      // not write to it.
      chmodSync(dir, 0o755);
      await expectRefused(dir, /not writable by this process \(uid 65534: EACCES\)/, { uid: 65534 });
      await expectRefused(join(dir, "sub"), new RegExp(`cannot create it in ${dir}: not writable`), {
        uid: 65534,
      });
    } else {
      chmodSync(dir, 0o500);
      cleanups.push(() => chmodSync(dir, 0o700));
      await expectRefused(dir, /not writable by this process/);
    }
  });

  it("checks LOCKD_DATA_DIR the same way", async () => {
    const { code, stderr } = await runLockd("", { env: { LOCKD_DATA_DIR: "/tmp" } });
    expect(code).toBe(2);
    expect(stderr).toMatch(/data directory \/tmp: writable by every user/);
  });

  it("creates a missing directory (and its parents) for itself, readable only by its user", async () => {
    const dir = join(scratchDir(), "a", "b");
    const lockd = await LockdProcess.start({ dataDir: dir });
    await lockd.dispose();
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });
});
