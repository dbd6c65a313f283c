import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tokenEpoch } from "@lock/protocol";
import { grantToken, LineClients, LockdCluster, LockdProcess } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";

/**
 * The fencing-token promise under faults, with real lockd processes: no two grants ever carry the
 * same token, and a grant made after a node could know of earlier grants carries a larger one
 * (docs/consistency.md, "Epochs"). One test per way it broke: a partition, a lone restart after
 * missed promotions, a stalled active, and epochs beyond the token layout.
 */
const clusters: LockdCluster[] = [];
const processes: LockdProcess[] = [];
afterEach(async () => {
  clients.closeAll();
  for (const cluster of clusters.splice(0)) await cluster.dispose();
  for (const lockd of processes.splice(0)) await lockd.dispose();
});

// A small clock-skew bound keeps the lone-restart wait (about 2 × skew + 1 s) short here.
const FLAGS = ["--max-clock-skew", "0.05"];

async function start(nodes: number): Promise<LockdCluster> {
  const cluster = await LockdCluster.start({ nodes, args: FLAGS });
  clusters.push(cluster);
  await cluster.settled();
  return cluster;
}

const clients = new LineClients();
const connect = (port: number) => clients.connect(port);
const tokenOf = grantToken;

/** Acquires `key` on the node at `port`, which must grant at once; returns the token. */
async function grant(port: number, key: string): Promise<bigint> {
  const client = await connect(port);
  const reply = await client.request(`A ${key} 30 0`);
  expect(reply).toMatch(new RegExp(`^A ${key} \\d+$`));
  return tokenOf(reply);
}

describe("fencing tokens under faults", () => {
  it("two nodes isolated from each other never grant the same token", async () => {
    const cluster = await start(3);
    const sinceB = cluster.nodes[1]!.logs.length;
    const sinceC = cluster.nodes[2]!.logs.length;
    // Every peer link cut: B and C each see no active and both promote, with the same knowledge.
    for (const i of [0, 1, 2]) cluster.isolate(i);
    await Promise.all([
      cluster.nodes[1]!.waitForServing({ since: sinceB }),
      cluster.nodes[2]!.waitForServing({ since: sinceC }),
    ]);
    const tokens = await Promise.all([0, 1, 2].map((i) => grant(cluster.nodes[i]!.port, "k")));
    // Three actives, three different epochs (their node ids differ), so three different tokens.
    expect(new Set(tokens).size).toBe(3);
    expect(new Set(tokens.map(tokenEpoch)).size).toBe(3);
  });

  it("a node restarted alone after promotions it missed grants above every earlier token", async () => {
    const cluster = await start(3);
    const [a, b, c] = cluster.nodes as [LockdProcess, LockdProcess, LockdProcess];
    const sinceB = b.logs.length;
    await a.kill("SIGKILL");
    await b.waitForServing({ since: sinceB });
    const fromB = await grant(b.port, "k");
    await Promise.all([b.kill("SIGKILL"), c.kill("SIGKILL")]);
    // C never heard of B's epoch: it knows only what it had before, and hears nobody now.
    await cluster.restart(2);
    await c.waitForServing({ since: 0 });
    const fromC = await grant(c.port, "k");
    expect(fromC).toBeGreaterThan(fromB);
  });

  it("a stalled active grants nothing on resume until the cluster confirms it, then only above the new epoch", async () => {
    const cluster = await start(2);
    const [a, b] = cluster.nodes as [LockdProcess, LockdProcess];
    const client = await connect(a.port);
    const before = tokenOf(await client.request("A k 30 0 first"));
    const sinceB = b.logs.length;
    a.pause();
    await b.waitForServing({ since: sinceB });
    const fromB = await grant(b.port, "other");
    // Sent while A is stopped: it waits in A's socket and is the first thing A reads on resume.
    client.send("A k2 30 0 late");
    a.resume();
    const reply = await client.next();
    // Not a grant from A's old epoch: either held (NO_ACTIVE) or, once confirmed, above B's epoch.
    if (reply.startsWith("A ")) expect(tokenOf(reply)).toBeGreaterThan(fromB);
    else expect(reply).toMatch(/^(E A k2 NO_ACTIVE late |M A k2 )/);
    expect(before).toBeLessThan(fromB);
    // A is the higher-priority node: it keeps the role (B steps down) and grants above B's tokens.
    await a.waitForLog((entry) => entry.msg === "serving");
    const after = await grant(a.port, "k3");
    expect(after).toBeGreaterThan(fromB);
  });
});

describe("epochs beyond the token layout", () => {
  async function startSingle(epochFile?: string): Promise<LockdProcess> {
    const lockd = await LockdProcess.start();
    processes.push(lockd);
    if (epochFile === undefined) return lockd;
    await lockd.stop();
    writeFileSync(join(lockd.dataDir, "epoch"), epochFile);
    return lockd;
  }

  it("a node whose epoch file holds the old layout's largest epoch grants instead of crashing", async () => {
    const lockd = await startSingle('{"epoch":"16777215"}\n');
    await lockd.restart();
    expect(await grant(lockd.port, "k")).toBeGreaterThan(0n);
  });

  it.each([
    ["an epoch beyond 40 bits", '{"epoch":"18446744073709551615"}\n'],
    ["an empty file", ""],
    ["a truncated file", '{"epoch":"12'],
    ["null", "null\n"],
  ])("refuses to start on %s, exit 2 naming the file", async (_, text) => {
    const lockd = await startSingle(text);
    await expect(lockd.restart()).rejects.toThrow(/code 2\b/);
    expect(lockd.stderr.join("")).toContain(join(lockd.dataDir, "epoch"));
    expect(readFileSync(join(lockd.dataDir, "epoch"), "utf8")).toBe(text);
  });

  it("a peer frame announcing an out-of-range epoch is refused: epoch file unchanged, the node promotes and serves", async () => {
    const cluster = await start(2);
    const standby = cluster.nodes[1]!;
    const epochFile = join(standby.dataDir, "epoch");
    const stored = readFileSync(epochFile, "utf8");
    const attacker = await connect(standby.port);
    // Both the earlier heartbeat format (no highest-epoch field) and the current one.
    for (let i = 0; i < 20; i++) {
      attacker.send(`!B ${cluster.advertised(0)} standby 18446744073709551615 -`);
      attacker.send(`!B ${cluster.advertised(0)} standby 18446744073709551615 - 18446744073709551615`);
    }
    expect(await attacker.next().catch(() => "closed")).toMatch(/^(E |closed)/);
    expect(readFileSync(epochFile, "utf8")).toBe(stored);
    const check = await connect(standby.port);
    expect(await check.request("I")).toMatch(/ role=standby /);
    // It promotes on an epoch it can use (the frame was never believed) and serves.
    const since = standby.logs.length;
    await cluster.nodes[0]!.kill("SIGKILL");
    await standby.waitForServing({ since });
    expect(await grant(standby.port, "still")).toBeGreaterThan(0n);
  });
});
