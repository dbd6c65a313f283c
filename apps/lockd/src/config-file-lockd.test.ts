import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LineClient, LockdProcess, runLockdToExit } from "@lock/testkit";
import { afterAll, describe, expect, it } from "vitest";

const folder = mkdtempSync(join(tmpdir(), "lockd-config-file-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** Runs lockd with `args` to its exit (a start that fails): status and stderr. */
const failedStart = (args: string[]) => runLockdToExit(args);

describe("lockd --config", () => {
  it("starts a real lockd from a YAML file: its limits and admin server come from the file", async () => {
    const file = join(folder, "lockd.yaml");
    writeFileSync(file, "max-keys: 1\nadmin: 127.0.0.1:0\nlog-level: info\n");
    await using lockd = await LockdProcess.start({ args: ["--config", file] });
    const health = await fetch(`http://127.0.0.1:${lockd.adminPort}/healthz`);
    expect(health.status).toBe(200);
    using client = await LineClient.connect(lockd.port);
    expect(await client.request("A first 30 0")).toMatch(/^A first \d+$/);
    expect(await client.request("A second 30 0")).toMatch(/^E .*TOO_MANY_KEYS/);
  });

  it("exits with status 2 on a bad value in the file, with the flag's error naming the file and key", async () => {
    const file = join(folder, "bad.toml");
    writeFileSync(file, "idle-timeout = 4294968\n");
    const dataDir = ["--data-dir", join(folder, "data")];
    const fromFile = await failedStart(["--config", file, ...dataDir]);
    const fromFlag = await failedStart(["--idle-timeout", "4294968", ...dataDir]);
    expect(fromFlag.code).toBe(2);
    expect(fromFile.code).toBe(2);
    expect(fromFlag.stderr).toMatch(/^lockd: --idle-timeout: must be at most 2147483\.647 s/);
    expect(fromFile.stderr).toBe(
      fromFlag.stderr.replace("lockd: --idle-timeout:", `lockd: ${file}: idle-timeout (--idle-timeout):`),
    );
  });

  it("exits with status 2 on an unknown key", async () => {
    const file = join(folder, "typo.json");
    writeFileSync(file, JSON.stringify({ "max-key": 10 }));
    const { code, stderr } = await failedStart(["--config", file, "--data-dir", join(folder, "data")]);
    expect(code).toBe(2);
    expect(stderr).toMatch(
      new RegExp(`^lockd: ${file}: unknown key "max-key"; the keys are lockd's flag names`),
    );
  });
});
