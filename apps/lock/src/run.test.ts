import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LineClient, LockdProcess } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, finishInTurn, JOB, LockCli } from "./cli-process.test.support.js";
import { EXIT_CODES } from "./exit-codes.js";

// lock run against a real lockd, with lock itself a real process (apps/lock/dist) and its commands
// tiny node scripts that check the lock's effects themselves.

let lockd: LockdProcess;
let dir: string;
let keys = 0;
const key = () => `run-test-${process.pid}-${++keys}`;
const env = () => ({ LOCK_SERVERS: lockd.address });

beforeAll(async () => {
  lockd = await LockdProcess.start();
  dir = mkdtempSync(join(tmpdir(), "lock-run-test-"));
});

afterAll(async () => {
  await lockd?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

async function info(): Promise<Map<string, string>> {
  using client = await LineClient.connect(lockd.port);
  const line = await client.request("I");
  return new Map(
    line
      .split(" ")
      .slice(1)
      .map((field) => field.split("=") as [string, string]),
  );
}

describe("lock run", () => {
  it("runs two commands on one key one after the other, never overlapping", async () => {
    const k = key();
    const log = join(dir, `${k}.log`);
    using first = LockCli.start(["run", k, "--", "node", "-e", JOB, log, "first"], env());
    await first.line((line) => line.startsWith("started first"));
    using second = LockCli.start(["run", k, "--", "node", "-e", JOB, log, "second"], env());
    // The second waits in lockd's queue for the key while the first still runs.
    await eventually(async () => (await info()).get("waiters") === "1");
    await finishInTurn(first, second, log);
  });

  it("gives the command LOCK_KEY and LOCK_TOKEN, the token of the grant it holds", async () => {
    const k = key();
    using cli = LockCli.start(
      [
        "run",
        k,
        "--",
        "node",
        "-e",
        'console.log("env", process.env.LOCK_KEY, process.env.LOCK_TOKEN); process.stdin.once("data", () => process.exit(0))',
      ],
      env(),
    );
    const [, lockKey, token] = (await cli.line((line) => line.startsWith("env "))).split(" ");
    expect(lockKey).toBe(k);
    // lockd answers NOT_OWNER only when the token holds the key (from another connection without
    // the acquire's id); a token that does not hold it gets X 0.
    using client = await LineClient.connect(lockd.port);
    expect(await client.request(`X ${k} ${token} 30`)).toMatch(new RegExp(`^E X ${k} NOT_OWNER `));
    expect(await client.request(`X ${k} ${BigInt(token!) + 1n} 30`)).toBe(`X ${k} 0`);
    cli.send("done");
    expect(await cli.status()).toBe(0);
    // Released when the command ended: the key is free at once.
    expect(await client.request(`Y ${k} 30`)).toMatch(new RegExp(`^Y ${k} \\d+$`));
  });

  it("runs --shared commands side by side and gives --permits commands their LOCK_SLOT", async () => {
    const hold =
      'console.log("env", process.env.LOCK_SLOT ?? "-"); process.stdin.once("data", () => process.exit(0))';
    const k = key();
    using r1 = LockCli.start(["run", k, "--shared", "--", "node", "-e", hold], env());
    using r2 = LockCli.start(["run", k, "--shared", "--", "node", "-e", hold], env());
    // Both readers run at once; neither has a slot.
    expect(await r1.line((line) => line.startsWith("env "))).toBe("env -");
    expect(await r2.line((line) => line.startsWith("env "))).toBe("env -");
    for (const cli of [r1, r2]) {
      cli.send("done");
      expect(await cli.status()).toBe(0);
    }
    const s = key();
    using p1 = LockCli.start(["run", s, "--permits", "2", "--", "node", "-e", hold], env());
    using p2 = LockCli.start(["run", s, "--permits", "2", "--", "node", "-e", hold], env());
    const slots = [await p1.line((l) => l.startsWith("env ")), await p2.line((l) => l.startsWith("env "))];
    expect(slots.sort()).toEqual(["env 0", "env 1"]);
    // A third permit is busy; a mismatched number of permits is refused.
    expect((await LockCli.run(["run", s, "--permits", "2", "--no-wait", "--", "true"], env())).code).toBe(
      EXIT_CODES.BUSY.status,
    );
    expect((await LockCli.run(["run", s, "--permits", "3", "--", "true"], env())).code).toBe(
      EXIT_CODES.REFUSED.status,
    );
    for (const cli of [p1, p2]) {
      cli.send("done");
      expect(await cli.status()).toBe(0);
    }
    expect((await LockCli.run(["run", s, "--shared", "--permits", "2", "--", "true"], env())).code).toBe(
      EXIT_CODES.USAGE.status,
    );
  });

  it("exits with the command's exit status, and 128 + n when signal n killed it", async () => {
    expect((await LockCli.run(["run", key(), "--", "node", "-e", "process.exit(7)"], env())).code).toBe(7);
    expect((await LockCli.run(["run", key(), "--", "sh", "-c", "exit 0"], env())).code).toBe(0);
    expect((await LockCli.run(["run", key(), "--", "sh", "-c", "kill -USR1 $$"], env())).code).toBe(128 + 10);
  });

  it.each(["SIGINT", "SIGTERM", "SIGHUP"] as const)("passes %s on to the command", async (signal) => {
    const k = key();
    const script = `for (const s of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(s, () => { console.log("got " + s); process.exit(42); });
console.log("ready"); setInterval(() => {}, 1000);`;
    using cli = LockCli.start(["run", k, "--", "node", "-e", script], env());
    await cli.line((line) => line === "ready");
    cli.kill(signal);
    expect(await cli.status()).toBe(42);
    expect(cli.stdout).toContain(`got ${signal}`);
    using client = await LineClient.connect(lockd.port);
    expect(await client.request(`Y ${k} 30`)).toMatch(new RegExp(`^Y ${k} \\d+$`));
  });

  it("exits 128 + n when a forwarded signal kills a command that does not handle it", async () => {
    using cli = LockCli.start(
      ["run", key(), "--", "node", "-e", 'console.log("ready"); setInterval(() => {}, 1000)'],
      env(),
    );
    await cli.line((line) => line === "ready");
    cli.kill("SIGTERM");
    expect(await cli.status()).toBe(128 + 15);
  });

  it("--no-wait exits 80 at once when the key is held, without running the command", async () => {
    const k = key();
    using holder = await LineClient.connect(lockd.port);
    expect(await holder.request(`A ${k} 60 0`)).toMatch(/^A /);
    const result = await LockCli.run(
      ["run", k, "--no-wait", "--", "node", "-e", 'console.log("ran")'],
      env(),
    );
    expect(result.code).toBe(EXIT_CODES.BUSY.status);
    expect(result.stdout).not.toContain("ran");
    expect(result.stderr).toContain("locked by someone else");
  });

  it("--no-wait runs the command when the key is free", async () => {
    const result = await LockCli.run(
      ["run", key(), "--no-wait", "--", "node", "-e", 'console.log("ran")'],
      env(),
    );
    expect(result).toMatchObject({ code: 0, stdout: ["ran"] });
  });

  it("--wait exits 81 when the wait runs out, without running the command", async () => {
    const k = key();
    using holder = await LineClient.connect(lockd.port);
    expect(await holder.request(`A ${k} 60 0`)).toMatch(/^A /);
    const result = await LockCli.run(
      ["run", k, "--wait", "200ms", "--", "node", "-e", 'console.log("ran")'],
      env(),
    );
    expect(result.code).toBe(EXIT_CODES.WAIT_TIMEOUT.status);
    expect(result.stdout).not.toContain("ran");
  });

  it("a signal while waiting for the lock gives up the wait: nothing runs, exit 128 + n", async () => {
    const k = key();
    using holder = await LineClient.connect(lockd.port);
    expect(await holder.request(`A ${k} 60 0`)).toMatch(/^A /);
    using cli = LockCli.start(["run", k, "--", "node", "-e", 'console.log("ran")'], env());
    await eventually(async () => (await info()).get("waiters") === "1");
    cli.kill("SIGINT");
    expect(await cli.status()).toBe(128 + 2);
    expect(cli.stdout).not.toContain("ran");
    // The wait was withdrawn on the server.
    await eventually(async () => (await info()).get("waiters") === "0");
  });

  it("exits 127 for a command that does not exist, and releases the lock", async () => {
    const k = key();
    const result = await LockCli.run(["run", k, "--", "no-such-command-for-lock-tests"], env());
    expect(result.code).toBe(127);
    expect(result.stderr).toContain("cannot run no-such-command-for-lock-tests: ENOENT");
    using client = await LineClient.connect(lockd.port);
    expect(await client.request(`Y ${k} 30`)).toMatch(/^Y /);
  });

  it("exits 83 when no server can be reached, 2 on a usage error", async () => {
    const unreachable = await LockCli.run(["run", key(), "--servers", "127.0.0.1:1", "--", "true"]);
    expect(unreachable.code).toBe(EXIT_CODES.NO_SERVER.status);
    expect(unreachable.stderr).toContain("no lockd server could be reached");
    const usage = await LockCli.run(["run", key(), "--lease", "soon", "--", "true"], env());
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("--lease");
  });

  it("a lease too short to keep is a usage error (2), not a lost lock (82); nothing runs", async () => {
    const result = await LockCli.run(
      ["run", key(), "--lease", "1ms", "--", "node", "-e", 'console.log("ran")'],
      env(),
    );
    expect(result.code).toBe(EXIT_CODES.USAGE.status);
    expect(result.stderr).toContain("--lease must be at least 1s (got 1ms)");
    expect(result.stdout).not.toContain("ran");
  });
});

describe("lock run with an auth token", () => {
  const token = "lock-cli-test-auth-token-0123456789";
  let secured: LockdProcess;

  beforeAll(async () => {
    secured = await LockdProcess.start({ env: { LOCKD_AUTH_TOKEN: token } });
  });
  afterAll(async () => {
    await secured?.dispose();
  });

  it("authenticates with LOCK_AUTH_TOKEN_FILE (or LOCK_AUTH_TOKEN) and exits 84 with a wrong token", async () => {
    const file = join(dir, "token");
    writeFileSync(file, `${token}\n`);
    const servers = { LOCK_SERVERS: secured.address };
    expect(
      (await LockCli.run(["run", key(), "--", "true"], { ...servers, LOCK_AUTH_TOKEN_FILE: file })).code,
    ).toBe(0);
    expect(
      (await LockCli.run(["run", key(), "--", "true"], { ...servers, LOCK_AUTH_TOKEN: token })).code,
    ).toBe(0);
    const wrong = await LockCli.run(["run", key(), "--", "true"], {
      ...servers,
      LOCK_AUTH_TOKEN: `${token}-wrong`,
    });
    expect(wrong.code).toBe(EXIT_CODES.AUTH_FAILED.status);
    expect(wrong.stderr).not.toContain(token);
  });
});
