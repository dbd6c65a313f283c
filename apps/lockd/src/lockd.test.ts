import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tokenEpoch } from "@lock/protocol";
import { LineClient, LOCKD_MAIN, LockdProcess } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";

const running: LockdProcess[] = [];
afterEach(async () => {
  for (const lockd of running.splice(0)) await lockd.dispose();
});

async function start(options: Parameters<typeof LockdProcess.start>[0] = {}): Promise<LockdProcess> {
  const lockd = await LockdProcess.start(options);
  running.push(lockd);
  return lockd;
}

const tokenOf = (line: string) => BigInt(line.split(" ")[2]!);

/** Runs lockd to its exit (one that does not start), with its own data directory. */
async function runLockd(args: string[], env: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "lockd-run-"));
  try {
    const child = spawn(process.execPath, [LOCKD_MAIN, "--data-dir", dataDir, ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const [code] = (await once(child, "close")) as [number | null];
    return { code, stdout, stderr };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

describe("lockd process", () => {
  it("issues larger tokens after a restart on the same data directory, even after kill -9", async () => {
    const lockd = await start();
    let before: bigint;
    let after = 0n;
    {
      using c = await LineClient.connect(lockd.port);
      await c.request("A k 30 0");
      await c.request("A k2 30 0");
      before = tokenOf(await c.request("A k3 30 0"));
    }
    await lockd.kill("SIGKILL");
    await lockd.restart();
    {
      using c = await LineClient.connect(lockd.port);
      // Held locks do not survive a restart (docs/consistency.md); the key is free again...
      after = tokenOf(await c.request("A k 30 0"));
      // ...and its new token is above every token issued before the crash.
      expect(after).toBeGreaterThan(before);
    }
    // Each start takes a larger epoch (round · node id 0), even within the same second.
    const second = BigInt(lockd.ready.epoch);
    expect(second).toBe(tokenEpoch(after));
    expect(second % 256n).toBe(0n);
    await lockd.stop();
    await lockd.restart();
    expect(BigInt(lockd.ready.epoch)).toBeGreaterThan(second);
  });

  it("stops gracefully on SIGTERM: queued acquires get SHUTTING_DOWN, exit code 0", async () => {
    const lockd = await start();
    using c = await LineClient.connect(lockd.port);
    await c.request("A k 30 0");
    c.send("A k 30 0 waiter");
    expect(await c.request("P sync")).toBe("P sync");
    const exit = lockd.stop();
    expect(await c.next()).toMatch(/^E A k SHUTTING_DOWN waiter /);
    expect(await exit).toEqual({ code: 0, signal: null });
  });

  it("SIGHUP without TLS files (nothing to reload): logs it, keeps serving and holding its locks", async () => {
    const lockd = await start();
    using c = await LineClient.connect(lockd.port);
    const token = tokenOf(await c.request("A k 30 0"));
    const since = lockd.logs.length;
    process.kill(lockd.pid!, "SIGHUP");
    expect(
      await lockd.waitForLog((entry) => String(entry.msg).startsWith("SIGHUP: no TLS files"), { since }),
    ).toMatchObject({
      level: 40,
      signal: "SIGHUP",
    });
    expect(await c.request(`R k ${token}`)).toBe("R k 1");
    expect(await lockd.stop()).toEqual({ code: 0, signal: null });
    expect(lockd.logs.slice(since).filter((entry) => entry.msg === "stopping")).toHaveLength(1);
  });

  it("still exits on SIGTERM after whatever read its log went away (closed stdout)", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "lockd-epipe-"));
    const child = spawn(process.execPath, [LOCKD_MAIN, "--listen", "127.0.0.1:0", "--data-dir", dataDir], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      await once(child.stdout, "data"); // "lockd ready"
      child.stdout.destroy();
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      // Before the fix, pino's exit-time flush retried the broken pipe forever and this never resolved.
      expect(await exited).toEqual([0, null]);
    } finally {
      child.kill("SIGKILL");
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("refuses a second lockd on the same data directory", async () => {
    const lockd = await start();
    await expect(LockdProcess.start({ dataDir: lockd.dataDir })).rejects.toThrow(/in use by lockd pid/);
  });

  it("exits with status 2 on a configuration error, naming the problem", async () => {
    await expect(LockdProcess.start({ args: ["--listen", "0.0.0.0:0"] })).rejects.toThrow(
      /without an auth token/,
    );
  });

  it("exits with status 2 on a degenerate limit or an overlong duration before it binds its port", async () => {
    // The port is taken: had lockd tried to bind it, it would exit 1 (port in use), not 2.
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const listen = ["--listen", `127.0.0.1:${port}`];
      const lineTooShort = await runLockd([...listen, "--max-line-bytes", "1"]);
      expect(lineTooShort.code).toBe(2);
      expect(lineTooShort.stderr).toMatch(/^lockd: --max-line-bytes: must be at least 1152 bytes/);
      const idleOverflow = await runLockd(listen, { LOCKD_IDLE_TIMEOUT: "4294968" });
      expect(idleOverflow.code).toBe(2);
      expect(idleOverflow.stderr).toMatch(/^lockd: LOCKD_IDLE_TIMEOUT \(--idle-timeout\): must be at most/);
    } finally {
      taken.close();
    }
  });

  it("prints its version with --version and exits 0", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    expect(await runLockd(["--version"])).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
  });

  it("exits with status 2 on an unknown log level, naming the flag or variable", async () => {
    const flag = await runLockd(["--log-level", "bogus"]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/^lockd: --log-level: must be one of fatal, error, warn, info, debug, trace/);
    const variable = await runLockd([], { LOCKD_LOG_LEVEL: "verbose" });
    expect(variable.code).toBe(2);
    expect(variable.stderr).toMatch(/^lockd: LOCKD_LOG_LEVEL \(--log-level\): must be one of/);
  });

  it("serves health, status and Prometheus metrics on the admin port", async () => {
    const lockd = await start({ admin: true });
    using c = await LineClient.connect(lockd.port);
    const token = tokenOf(await c.request("A k 30 0"));
    c.send("A k 30 0 w");
    expect(await c.request(`R k ${token}`)).toMatch(/^A k \d+ w$/);
    expect(await c.next()).toBe("R k 1");
    expect(await c.request("O k")).toMatch(/^O k \d+ x 1$/);
    const base = `http://127.0.0.1:${lockd.adminPort}`;
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: "ok" });
    const status = (await (await fetch(`${base}/status`)).json()) as { counters: Record<string, number> };
    expect(status).toMatchObject({
      role: "active",
      epoch: lockd.ready.epoch,
      connections: 1,
      keysHeld: 1,
      waiters: 0,
    });
    expect(status.counters).toMatchObject({ grants: 2, handoffs: 1, releases: 1 });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^lockd_requests_total\{verb="A"\} 2$/m);
    expect(metrics).toMatch(/^lockd_grants_total 2$/m);
    expect(metrics).toMatch(/^lockd_handoffs_total 1$/m);
    expect(metrics).toMatch(/^lockd_keys_held 1$/m);
    expect(metrics).toMatch(/^lockd_watches 1$/m);
    expect(metrics).toMatch(/^lockd_connections_unauthenticated 0$/m);
    expect(metrics).toMatch(/^lockd_queue_wait_seconds_count 1$/m);
  });

  it("requires the auth token from the environment, and never logs it", async () => {
    const lockd = await start({ env: { LOCKD_AUTH_TOKEN: "very-secret-token" } });
    using c = await LineClient.connect(lockd.port);
    expect(await c.request("A k 30 0")).toMatch(/NOT_AUTHENTICATED/);
    expect(await c.request("H very-secret-token")).toBe("H");
    expect(await c.request("A k 30 0")).toMatch(/^A k \d+$/);
    expect(JSON.stringify(lockd.logs)).not.toContain("very-secret-token");
  });

  it("closes a connection on a wrong secret, and counts and logs it without the secret", async () => {
    const lockd = await start({ admin: true, env: { LOCKD_AUTH_TOKEN: "very-secret-token" } });
    using c = await LineClient.connect(lockd.port);
    const remote = `127.0.0.1:${c.socket.localPort}`;
    c.send("H guessed-secret\nH very-secret-token");
    expect(await c.next()).toMatch(/^E H - AUTH_FAILED - /);
    await c.closed;
    expect(c.buffered).toEqual([]);
    const entry = await lockd.waitForLog((e) => e.msg === "authentication failed", { since: 0 });
    expect(entry).toMatchObject({ level: 40, remote, failures: 1 });
    const metrics = await (await fetch(`http://127.0.0.1:${lockd.adminPort}/metrics`)).text();
    expect(metrics).toMatch(/^lockd_auth_failures_total 1$/m);
    expect(metrics).toMatch(/^lockd_errors_total\{code="AUTH_FAILED"\} 1$/m);
    expect(JSON.stringify(lockd.logs)).not.toContain("guessed-secret");
  });

  it("asks for the admin token, when one is set, on everything but the probes and the page's files", async () => {
    const adminToken = "admin-token-of-24-chars!";
    const lockd = await start({ admin: true, env: { LOCKD_ADMIN_TOKEN: adminToken } });
    const base = `http://127.0.0.1:${lockd.adminPort}`;
    const get = (path: string, authorization?: string) =>
      fetch(`${base}${path}`, authorization ? { headers: { authorization } } : {});
    expect((await get("/healthz")).status).toBe(200);
    expect((await get("/healthz?probe=1")).status).toBe(200);
    // The page's static files hold no data; the page asks for the token before it reads any.
    for (const path of ["/readyz", "/", "/status.js", "/status.css", "/?x=1"])
      expect((await get(path)).status, path).toBe(200);
    const guarded = ["/metrics", "/status", "/history", "/locks", "/version", "/metrics?x=/healthz"];
    for (const path of [...guarded, "/nowhere", "/index.html", "/status.js/x"]) {
      const refused = await get(path);
      expect(refused.status, path).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="lockd"');
      expect((await get(path, "Bearer wrong-admin-token-guess")).status, path).toBe(401);
    }
    const metrics = await get("/metrics", `Bearer ${adminToken}`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^lockd_keys_held 0$/m);
    expect((await get("/status", `bearer ${adminToken}`)).status).toBe(200);
    expect(JSON.stringify(lockd.logs)).not.toContain(adminToken);
  });
});
