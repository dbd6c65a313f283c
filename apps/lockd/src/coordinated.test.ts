import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { tokenEpoch } from "@lock/protocol";
import { EtcdCluster, grantToken, LineClients, LockdCluster, type LockdProcess } from "@lock/testkit";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

/**
 * Coordinated mode with real lockd processes and a real store (docs/consistency.md, "With a
 * coordinator"): a node is the active only while it holds its cluster's ownership lease, and takes
 * its epochs from the store's counter. Each test gets its own etcd prefix or PostgreSQL schema.
 */
const LEASE_S = 1;
const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

let etcd: EtcdCluster;
const clusters: LockdCluster[] = [];
const schemas: string[] = [];

beforeAll(async () => {
  etcd = await EtcdCluster.start({ members: 3 });
}, 30_000);

afterEach(async () => {
  clients.closeAll();
  for (const cluster of clusters.splice(0)) await cluster.dispose();
});

afterAll(async () => {
  await etcd?.dispose();
  if (schemas.length === 0) return;
  const db = new pg.Client({ connectionString: PG_URL });
  await db.connect();
  for (const schema of schemas) await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await db.end();
});

const etcdUrl = () =>
  `etcd://${etcd.members.map((m) => m.endpoint).join(",")}/lock-test-${randomBytes(4).toString("hex")}/`;

function postgresUrl(): string {
  const schema = `lock_coordination_test_${randomBytes(4).toString("hex")}`;
  schemas.push(schema);
  return `${PG_URL}?schema=${schema}`;
}

interface Start {
  readonly nodes: number;
  readonly url?: string;
  readonly leaseS?: number;
  readonly nodeEnv?: (index: number) => Readonly<Record<string, string>>;
}

/**
 * Debian's libfaketime (.ci/coordinator-tools.sh installs it), preloaded into one lockd: its wall
 * clock runs `offsetS` seconds off while its monotonic clock stays true.
 */
function skewedClock(offsetS: number): Record<string, string> {
  const library = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"]
    .map((dir) => `${dir}/faketime/libfaketime.so.1`)
    .find((path) => existsSync(path));
  if (!library) throw new Error("libfaketime is not installed: run .ci/coordinator-tools.sh");
  return { LD_PRELOAD: library, FAKETIME: String(offsetS), FAKETIME_DONT_FAKE_MONOTONIC: "1" };
}

/** A coordinated cluster whose first node serves, every other one following it. */
async function start({ nodes, url = etcdUrl(), leaseS = LEASE_S, nodeEnv }: Start): Promise<LockdCluster> {
  const cluster = await LockdCluster.start({
    nodes,
    args: ["--coordinator", url, "--cluster-name", "c1", "--coordinator-lease", String(leaseS)],
    ...(nodeEnv ? { nodeEnv } : {}),
  });
  clusters.push(cluster);
  await cluster.settled();
  return cluster;
}

const clients = new LineClients();
const connect = (port: number) => clients.connect(port);
const tokenOf = grantToken;

/** One `A` on a fresh connection: the token if granted at once, else undefined (`E … NO_ACTIVE`, `M`). */
async function tryGrant(node: LockdProcess, key: string): Promise<bigint | undefined> {
  const client = await connect(node.port);
  const reply = await client.request(`A ${key} 30 0`);
  client.close();
  return reply.startsWith(`A ${key} `) ? tokenOf(reply) : undefined;
}

let roundKeys = 0;

/** Every `ms` for `forMs`, asks every node for a fresh key: which nodes granted, round by round. */
async function grantRounds(cluster: LockdCluster, forMs: number, ms = 50) {
  const rounds: Array<Array<{ node: number; token: bigint }>> = [];
  const until = performance.now() + forMs;
  while (performance.now() < until) {
    const key = `r${roundKeys++}`;
    const tokens = await Promise.all(cluster.nodes.map((node) => tryGrant(node, key)));
    rounds.push(tokens.flatMap((token, node) => (token === undefined ? [] : [{ node, token }])));
    await new Promise((resolve) => setTimeout(resolve, ms));
  }
  return rounds;
}

describe.each([
  ["etcd", etcdUrl],
  ["PostgreSQL", postgresUrl],
])("coordinated by %s", (_, url) => {
  it("with every peer link cut, only the lease holder grants, and tokens keep rising", async () => {
    const cluster = await start({ nodes: 3, url: url() });
    const since = cluster.nodes.map((node) => node.logs.length);
    for (const i of [0, 1, 2]) cluster.isolate(i);
    // Longer than a lease: without a coordinator the standbys would have promoted by now.
    const rounds = await grantRounds(cluster, 3 * LEASE_S * 1000);
    const grants = rounds.flat();
    expect(grants.length).toBeGreaterThan(10);
    expect(new Set(grants.map((g) => g.node))).toEqual(new Set([0]));
    for (let i = 1; i < grants.length; i++) expect(grants[i]!.token).toBeGreaterThan(grants[i - 1]!.token);
    const promotions = cluster.nodes.flatMap((node, i) =>
      node.logs.slice(since[i]).filter((e) => e.msg === "role changed" && e.role === "active"),
    );
    expect(promotions).toEqual([]);
  });
});

describe("coordinated by PostgreSQL: failures", () => {
  it("an active keeps serving while every connection of its store is cut (a database restart, as its clients see it)", async () => {
    const url = postgresUrl();
    const schema = new URL(url).searchParams.get("schema")!;
    const cluster = await start({ nodes: 2, url, leaseS: 3 });
    const db = new pg.Client({ connectionString: PG_URL });
    await db.connect();
    try {
      const terminate = async () => {
        const { rowCount } = await db.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
          [`lockd-coordinator:${schema}`],
        );
        return rowCount ?? 0;
      };
      expect(await terminate()).toBeGreaterThan(0);
      const rounds = await grantRounds(cluster, 2_000);
      expect(await terminate()).toBeGreaterThan(0);
      rounds.push(...(await grantRounds(cluster, 2_000)));
      expect(rounds.every((round) => round.length === 1 && round[0]!.node === 0)).toBe(true);
    } finally {
      await db.end();
    }
  });
});

describe("coordinated by etcd: failures", () => {
  it("a SIGSTOPped active grants nothing on resume once its lease ran out; its successor's tokens are above its own", async () => {
    const cluster = await start({ nodes: 2 });
    const [a, b] = cluster.nodes as [LockdProcess, LockdProcess];
    const client = await connect(a.port);
    const before = tokenOf(await client.request("A k 30 0 first"));
    const sinceB = b.logs.length;
    a.pause();
    await b.waitForServing({ since: sinceB });
    const fromB = await tryGrant(b, "other");
    expect(fromB).toBeGreaterThan(before);
    // Waits in A's socket: the first thing A reads when it runs again, before any timer.
    client.send("A k2 30 0 late");
    a.resume();
    const reply = await client.next();
    expect(reply).toMatch(/^(E A k2 NO_ACTIVE late |M A k2 )/);
    // Its renewal finds the lease gone: it steps down. B serves on (or, once A is synced again, hands
    // the role back to it, the higher-priority node): either way above B's first token.
    await a.waitForLog((e) => e.msg === "role changed" && e.role === "standby");
    expect(await waitForGrant(cluster, "after", 10_000)).toBeGreaterThan(fromB!);
  });

  it("a node restarted alone after promotions it missed grants above every earlier token, its clock five minutes behind", async () => {
    const cluster = await start({
      nodes: 3,
      nodeEnv: (index) => (index === 2 ? skewedClock(-300) : {}),
    });
    const [a, b, c] = cluster.nodes as [LockdProcess, LockdProcess, LockdProcess];
    const sinceB = b.logs.length;
    await a.kill("SIGKILL");
    await b.waitForServing({ since: sinceB, timeoutMs: 10_000 });
    const fromB = await tryGrant(b, "k");
    await Promise.all([b.kill("SIGKILL"), c.kill("SIGKILL")]);
    // C never heard of B's epoch, and its clock is minutes behind: the store's counter orders it.
    await cluster.restart(2);
    await c.waitForServing({ since: 0, timeoutMs: 10_000 });
    const fromC = await tryGrant(c, "k");
    expect(fromC).toBeGreaterThan(fromB!);
    expect(tokenEpoch(fromC!)).toBeGreaterThan(tokenEpoch(fromB!));
  });

  it("an active keeps serving while the etcd leader is killed (its lease stays renewable)", async () => {
    // A lease well above etcd's election time (about half a second with the harness's timings).
    const cluster = await start({ nodes: 2, leaseS: 3 });
    const leader = await etcd.leader();
    const kill = etcd.kill(leader);
    const rounds = await grantRounds(cluster, 3_000);
    await kill;
    expect(rounds.every((round) => round.length === 1 && round[0]!.node === 0)).toBe(true);
  });

  it("with the store unreachable past the lease, the active answers NO_ACTIVE; it serves again once the store is back", async () => {
    const cluster = await start({ nodes: 2 });
    const [a] = cluster.nodes as [LockdProcess, LockdProcess];
    const before = await tryGrant(a, "k");
    const since = a.logs.length;
    for (const member of etcd.members) member.child.kill("SIGSTOP");
    try {
      await a.waitForLog((e) => e.msg === "coordinator unavailable", { since });
      // Within a lease by a's own clock it stops granting, and stays so while the store is away.
      await until(async () => (await tryGrant(a, "k2")) === undefined, 3 * LEASE_S * 1000);
      const client = await connect(a.port);
      expect(await client.request("A k2 30 0 held")).toMatch(/^E A k2 NO_ACTIVE held /);
    } finally {
      for (const member of etcd.members) member.child.kill("SIGCONT");
    }
    const served = await waitForGrant(cluster, "k3", 15_000);
    expect(served).toBeGreaterThan(before!);
  });
});

/** Polls `done` every 50 ms until it holds; fails after `withinMs`. */
async function until(done: () => Promise<boolean>, withinMs: number): Promise<void> {
  const deadline = performance.now() + withinMs;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Asks every node for `key` until one grants (a node serving again); the token. */
async function waitForGrant(cluster: LockdCluster, key: string, withinMs: number): Promise<bigint> {
  let token: bigint | undefined;
  await until(async () => {
    for (const node of cluster.nodes) token ??= await tryGrant(node, key);
    return token !== undefined;
  }, withinMs);
  return token!;
}
