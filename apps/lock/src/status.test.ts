import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LineClient, LockdCluster, LockdProcess } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, LockCli } from "./cli-process.test.support.js";
import { EXIT_CODES } from "./exit-codes.js";
import type { StatusView } from "./status-view.js";

const AUTH_TOKEN = "status-test-auth-token-0123456789";
const ADMIN_TOKEN = "status-test-admin-token-0123456789";

async function status(args: string[], env: Record<string, string>) {
  const result = await LockCli.run(["status", "--json", ...args], env);
  return { ...result, view: JSON.parse(result.stdout.join("\n")) as StatusView };
}

describe("lock status on one node", () => {
  let lockd: LockdProcess;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    lockd = await LockdProcess.start({
      admin: true,
      env: { LOCKD_AUTH_TOKEN: AUTH_TOKEN, LOCKD_ADMIN_TOKEN: ADMIN_TOKEN },
    });
    dir = mkdtempSync(join(tmpdir(), "lock-status-test-"));
    writeFileSync(join(dir, "admin-token"), ADMIN_TOKEN);
    env = { LOCK_SERVERS: lockd.address, LOCK_AUTH_TOKEN: AUTH_TOKEN };
  });
  afterAll(async () => {
    await lockd?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it("over the lock protocol alone (I): role, epoch, keys, waiters, connections, uptime", async () => {
    using holder = await LineClient.connect(lockd.port);
    expect(await holder.request(`H ${AUTH_TOKEN}`)).toBe("H");
    expect(await holder.request("A status:held 60 0")).toMatch(/^A /);
    const { code, view } = await status([], env);
    expect(code).toBe(0);
    expect(view.active).toBe(lockd.address);
    expect(view.nodes).toEqual([
      expect.objectContaining({
        node: lockd.address,
        state: "up",
        role: "active",
        epoch: lockd.ready.epoch,
        keys: 1,
        waiters: 0,
        grantsPerSecond: null,
      }),
    ]);
    expect(view.nodes[0]!.connections).toBeGreaterThanOrEqual(2);
    expect(view.nodes[0]!.uptimeMs).toBeGreaterThan(0);
  });

  it("as a table by default", async () => {
    const { code, stdout } = await LockCli.run(["status"], env);
    expect(code).toBe(0);
    expect(stdout[0]).toBe(`active: ${lockd.address}    1 of 1 nodes answered`);
    expect(stdout[2]).toMatch(/^NODE +STATE +ROLE +EPOCH +KEYS +WAITERS +CONNS +UPTIME$/);
    expect(stdout[3]).toMatch(new RegExp(`^${lockd.address} +up +active +${lockd.ready.epoch} `));
  });

  it("with --admin: grants/s from /status too, with the bearer token from --admin-token-file", async () => {
    const admin = `127.0.0.1:${lockd.adminPort}`;
    const { code, view, stdout } = await status(
      ["--admin", admin, "--admin-token-file", join(dir, "admin-token")],
      env,
    );
    expect(code).toBe(0);
    expect(view.nodes).toHaveLength(1);
    expect(view.nodes[0]).toMatchObject({
      node: lockd.address,
      state: "up",
      role: "active",
      adminAddress: admin,
    });
    expect(typeof view.nodes[0]!.grantsPerSecond).toBe("number");
    expect(stdout.join("\n")).not.toContain(ADMIN_TOKEN);
  });

  it("lock locks lists a real lockd's held keys, by prefix, across pages", async () => {
    using holder = await LineClient.connect(lockd.port);
    expect(await holder.request(`H ${AUTH_TOKEN}`)).toBe("H");
    const tokens: string[] = [];
    for (const key of ["locks:a", "locks:b", "locks:c"]) {
      const reply = await holder.request(`A ${key} 60 0`);
      expect(reply).toMatch(/^A /);
      tokens.push(reply.split(" ")[2]!);
    }
    const admin = `127.0.0.1:${lockd.adminPort}`;
    const { code, stdout } = await LockCli.run(
      ["locks", "--admin", admin, "--prefix", "locks:", "--limit", "2", "--json"],
      { LOCK_ADMIN_TOKEN: ADMIN_TOKEN },
    );
    expect(code).toBe(0);
    const listed = JSON.parse(stdout.join("\n")) as {
      locks: Array<{ key: string; token: string; holder: string }>;
    };
    expect(listed.locks.map(({ key, token }) => [key, token])).toEqual([
      ["locks:a", tokens[0]],
      ["locks:b", tokens[1]],
    ]);
    expect(listed.locks[0]!.holder).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it("--admin alone is enough: the default server address is not asked then", async () => {
    const admin = `127.0.0.1:${lockd.adminPort}`;
    const { code, view } = await status(["--admin", admin], { LOCK_ADMIN_TOKEN: ADMIN_TOKEN });
    expect(code).toBe(0);
    expect(view.nodes).toMatchObject([
      { node: lockd.address, state: "up", lockAddress: null, adminAddress: admin },
    ]);
  });

  it("a refused token is reported, never shown; 84 when no node answered because of it", async () => {
    const admin = `127.0.0.1:${lockd.adminPort}`;
    const wrongAdmin = await status(["--admin", admin], {
      ...env,
      LOCK_ADMIN_TOKEN: "wrong-admin-token-0123456789",
    });
    // The node still answered I: it is up, and the admin server's refusal is noted.
    expect(wrongAdmin.code).toBe(0);
    expect(wrongAdmin.view.nodes[0]).toMatchObject({ state: "up", grantsPerSecond: null });
    expect(wrongAdmin.view.nodes[0]!.errors.join()).toMatch(/refused the admin token/);
    const wrongAuth = await status([], {
      LOCK_SERVERS: lockd.address,
      LOCK_AUTH_TOKEN: "wrong-auth-token-0123456789",
    });
    expect(wrongAuth.code).toBe(EXIT_CODES.AUTH_FAILED.status);
    expect(wrongAuth.view.nodes[0]).toMatchObject({ state: "down" });
    expect(wrongAuth.stdout.join("\n")).not.toContain("wrong-auth-token");
  });

  it("a node that does not answer is DOWN; 83 when none answered", async () => {
    const { code, stdout, stderr } = await LockCli.run(["status", "--servers", "127.0.0.1:1"], env);
    expect(code).toBe(EXIT_CODES.NO_SERVER.status);
    expect(stdout.join("\n")).toMatch(/^127\.0\.0\.1:1 +DOWN /m);
    expect(stderr).toContain("no node answered");
  });
});

describe("lock status with nodes that never answer", () => {
  it("a node that accepts but stays silent, on either port, is DOWN after --timeout", async () => {
    // Accepts connections, reads and never writes: a hung process, or a black hole behind a proxy.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket.on("error", () => {})));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const address = `127.0.0.1:${(silent.address() as { port: number }).port}`;
    try {
      const { code, view } = await status(
        ["--servers", address, "--admin", address, "--timeout", "300ms"],
        {},
      );
      expect(code).toBe(EXIT_CODES.NO_SERVER.status);
      expect(view.nodes).toMatchObject([{ node: address, state: "down" }]);
      expect(view.nodes[0]!.errors).toEqual([
        `lockd ${address}: no answer within 300 ms`,
        `admin server ${address}: no answer within 300 ms`,
      ]);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it("a port that speaks something else is DOWN, saying what it answered", async () => {
    // It reads what it is sent (so it sees the client close) and answers with its own banner.
    const other = createServer((socket) =>
      socket
        .on("error", () => {})
        .resume()
        .end("SSH-2.0-OpenSSH_9.2\r\n"),
    );
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    const address = `127.0.0.1:${(other.address() as { port: number }).port}`;
    try {
      const { code, view } = await status(["--servers", address], {});
      expect(code).toBe(EXIT_CODES.NO_SERVER.status);
      expect(view.nodes[0]!.errors).toEqual([
        `lockd ${address}: answered "SSH-2.0-OpenSSH_9.2", not an I reply: is this a lockd port?`,
      ]);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });
});

describe("lock status on a cluster", () => {
  it("shows every node's role, liveness and lag; a dead node is DOWN and not live", async () => {
    await using cluster = await LockdCluster.start({ nodes: 3, args: ["--admin", "127.0.0.1:0"] });
    await cluster.nodes[0]!.waitForServing({ since: 0 });
    await Promise.all(
      cluster.nodes.slice(1).map((node) => node.waitForFollowing(cluster.advertised(0), { since: 0 })),
    );
    const servers = cluster.proxies.map((proxy) => proxy.address);
    const admin = cluster.nodes.map((node) => `127.0.0.1:${node.adminPort}`);
    const env = { LOCK_SERVERS: servers.join(","), LOCK_ADMIN: admin.join(",") };
    // The active has heard every standby and knows how far each is behind.
    await eventually(async () => {
      const { view } = await status([], env);
      return view.nodes.every(
        (row) => row.live === true && (row.role === "active" || row.replicationLagOps !== null),
      );
    });
    const { code, view } = await status([], env);
    expect(code).toBe(0);
    expect(view.active).toBe(servers[0]);
    expect(view.nodes.map((row) => [row.node, row.state, row.role, row.priority])).toEqual([
      [servers[0], "up", "active", 0],
      [servers[1], "up", "standby", 1],
      [servers[2], "up", "standby", 2],
    ]);

    await cluster.nodes[2]!.kill("SIGKILL");
    await eventually(async () => (await status([], env)).view.nodes[2]?.live === false);
    const after = await LockCli.run(["status"], env);
    expect(after.code).toBe(0);
    expect(after.stdout[0]).toBe(`active: ${servers[0]}    2 of 3 nodes answered`);
    expect(after.stdout.join("\n")).toMatch(
      new RegExp(`^${servers[2]} +DOWN +was standby +- +- +- +- +- +NO `, "m"),
    );
  });

  it("right after a kill of the active: the dead node is DOWN, never the active, and one row is active", async () => {
    // A peer timeout long enough that the standbys still name the dead node when lock asks.
    await using cluster = await LockdCluster.start({
      nodes: 3,
      args: ["--admin", "127.0.0.1:0", "--peer-timeout", "3"],
    });
    await cluster.nodes[0]!.waitForServing({ since: 0 });
    await Promise.all(
      cluster.nodes.slice(1).map((node) => node.waitForFollowing(cluster.advertised(0), { since: 0 })),
    );
    const servers = cluster.proxies.map((proxy) => proxy.address);
    const admin = cluster.nodes.map((node) => `127.0.0.1:${node.adminPort}`);
    const envs: Array<Record<string, string>> = [
      { LOCK_SERVERS: servers.join(",") },
      { LOCK_SERVERS: servers.join(","), LOCK_ADMIN: admin.join(",") },
    ];
    for (const env of envs) {
      const { view } = await status([], env);
      expect(view.active).toBe(servers[0]);
    }
    // Standbys show the epoch of the active they follow, not 0 (they learn it from its heartbeats).
    await eventually(async () => {
      const { view } = await status([], envs[0]!);
      return view.nodes.every((row) => row.epoch === view.nodes[0]!.epoch);
    });
    expect((await status([], envs[1]!)).view.nodes.map((row) => row.epoch)).toEqual(
      Array(3).fill((await cluster.info(0)).epoch),
    );
    const since = cluster.nodes[1]!.logs.length;
    await cluster.nodes[0]!.kill("SIGKILL");

    // Within the peer timeout: the standbys still follow node 0, which does not answer.
    const early = await status([], { LOCK_SERVERS: servers.join(",") });
    expect(early.code).toBe(0);
    expect(early.view.active).toBeNull();
    expect(early.view.nodes[0]).toMatchObject({ node: servers[0], state: "down", role: null });
    expect(early.view.notes.join()).toContain(`follow ${servers[0]}, which did not answer`);

    // After the failover: node 1 is the one active row; node 0 is DOWN, last seen active.
    await cluster.nodes[1]!.waitForServing({ since });
    for (const env of envs) {
      await eventually(async () => (await status([], env)).view.active === servers[1]);
      const { view } = await status([], env);
      expect(view.nodes.filter((row) => row.role === "active").map((row) => row.node)).toEqual([servers[1]]);
      expect(view.nodes[0]).toMatchObject({ node: servers[0], state: "down", role: null });
      const table = await LockCli.run(["status"], env);
      expect(table.stdout[0]).toBe(`active: ${servers[1]}    2 of 3 nodes answered`);
      expect(table.stdout.filter((line) => /^\S+ +\S+ +active /.test(line))).toHaveLength(1);
    }
  }, 60_000);
});
