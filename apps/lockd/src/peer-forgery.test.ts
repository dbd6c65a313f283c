import { readFileSync } from "node:fs";
import { join } from "node:path";
import { composeEpoch } from "@lock/protocol";
import { clockRound } from "@lock/server";
import { type LineClient, LockdCluster, type LockdProcess } from "@lock/testkit";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";

/**
 * Peer frames (`!…`) forged on a plain client connection, the attacks a tester reproduced before
 * peers had to authenticate: each must be refused with PEER_NOT_AUTHENTICATED, the connection
 * closed, and the node's role, lock table, epoch and epoch file left as they were. With a client
 * auth token the forger holds it (every client does), so it sends `H` first.
 */
const CLIENT_TOKEN = "client-token-every-client-holds";

const clusters: LockdCluster[] = [];
const clients: LineClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const cluster of clusters.splice(0)) await cluster.dispose();
});

async function start(clientToken: string | undefined): Promise<LockdCluster> {
  const cluster = await LockdCluster.start({
    nodes: 2,
    env: clientToken === undefined ? {} : { LOCKD_AUTH_TOKEN: clientToken },
  });
  clusters.push(cluster);
  await cluster.nodes[0]!.waitForServing({ since: 0 });
  await cluster.nodes[1]!.waitForFollowing(cluster.advertised(0), { since: 0 });
  return cluster;
}

async function connect(
  cluster: LockdCluster,
  i: number,
  clientToken: string | undefined,
): Promise<LineClient> {
  const client = await cluster.connect(i);
  clients.push(client);
  if (clientToken !== undefined) expect(await client.request(`H ${clientToken}`)).toBe("H");
  return client;
}

/**
 * Sends `lines` in one write from a client connection to node i, then a ping: returns every reply
 * before the pong, or before the node closed the connection, and whether it closed.
 */
async function forge(
  cluster: LockdCluster,
  i: number,
  clientToken: string | undefined,
  lines: readonly string[],
): Promise<{ replies: string[]; closed: boolean }> {
  const client = await connect(cluster, i, clientToken);
  client.send([...lines, "P sync"].join("\n"));
  const replies: string[] = [];
  for (;;) {
    let line: string;
    try {
      line = await client.next();
    } catch {
      return { replies, closed: true };
    }
    if (line === "P sync") return { replies, closed: false };
    replies.push(line);
  }
}

function expectRefused(outcome: { replies: string[]; closed: boolean }): void {
  expect(outcome.replies).toHaveLength(1);
  expect(outcome.replies[0]).toMatch(/^E \? - PEER_NOT_AUTHENTICATED - /);
  expect(outcome.closed).toBe(true);
}

/** What a forgery must not change: role, epoch and keys as `I` reports them, and the epoch file. */
async function snapshot(cluster: LockdCluster, i: number, clientToken: string | undefined) {
  const client = await connect(cluster, i, clientToken);
  const info = await client.request("I");
  client.close();
  const field = (name: string) => new RegExp(` ${name}=(\\S+)`).exec(info)?.[1];
  return {
    role: field("role"),
    epoch: field("epoch"),
    keys: field("keys"),
    epochFile: readFileSync(join(cluster.nodes[i]!.dataDir, "epoch"), "utf8"),
  };
}

function roleChangesSince(node: LockdProcess, since: number) {
  return node.logs.slice(since).filter((entry) => entry.msg === "role changed");
}

/** Polls `check` until it holds (a fact no event announces); the test timeout bounds it. */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe.each([
  ["without a client auth token", undefined],
  ["with a client auth token", CLIENT_TOKEN],
])("peer frames forged on a client connection, %s", (_, clientToken) => {
  it("cannot make a standby promote (!J, !S, !s, !O)", async () => {
    const cluster = await start(clientToken);
    const before = await snapshot(cluster, 1, clientToken);
    const since = cluster.nodes[1]!.logs.length;
    const active = cluster.advertised(0);
    expectRefused(
      await forge(cluster, 1, clientToken, [`!J ${active} active 1 1`, "!S 1 0", "!s 0 0", "!O 1 1000"]),
    );
    expect(await snapshot(cluster, 1, clientToken)).toEqual(before);
    expect(roleChangesSince(cluster.nodes[1]!, since)).toEqual([]);
    // Still one active: the standby sends lock verbs there.
    const client = await connect(cluster, 1, clientToken);
    expect(await client.request("A forged 30 0 f1")).toBe(`M A forged ${active} f1`);
  });

  it("cannot replace a standby's replica (!J, !S, !h, !s): after failover the real holder keeps its lock", async () => {
    const cluster = await start(clientToken);
    const holder = await connect(cluster, 0, clientToken);
    const granted = await holder.request("A held 30 0 h1");
    expect(granted).toMatch(/^A held \d+ h1$/);
    const token = granted.split(" ")[2]!;
    await until(async () => (await snapshot(cluster, 1, clientToken)).keys === "1");
    const before = await snapshot(cluster, 1, clientToken);

    const active = cluster.advertised(0);
    expectRefused(
      await forge(cluster, 1, clientToken, [
        `!J ${active} active 1 1`,
        "!S 1 0",
        "!h injected:key 1 86400000 evil",
        "!s 0 1",
      ]),
    );
    expect(await snapshot(cluster, 1, clientToken)).toEqual(before);

    const since = cluster.nodes[1]!.logs.length;
    await cluster.nodes[0]!.kill("SIGKILL");
    await cluster.nodes[1]!.waitForServing({ since });
    const client = await connect(cluster, 1, clientToken);
    expect(await client.request("Y held 30")).toBe("N held");
    expect(await client.request(`R held ${token} h1`)).toBe("R held 1");
    expect(await client.request("Y injected:key 30")).toMatch(/^Y injected:key \d+$/);
  });

  it("cannot make the survivor of a dead active step down (!B claiming the dead node is active)", async () => {
    const cluster = await start(clientToken);
    const since = cluster.nodes[1]!.logs.length;
    await cluster.nodes[0]!.kill("SIGKILL");
    await cluster.nodes[1]!.waitForServing({ since });
    const before = await snapshot(cluster, 1, clientToken);
    const promoted = cluster.nodes[1]!.logs.length;
    const dead = cluster.advertised(0);
    // The attacker's pace: one forged heartbeat per heartbeat interval (50 ms), several intervals.
    for (let i = 0; i < 6; i++) {
      expectRefused(await forge(cluster, 1, clientToken, [`!B ${dead} active 1 ${dead} 1`]));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await snapshot(cluster, 1, clientToken)).toEqual(before);
    expect(roleChangesSince(cluster.nodes[1]!, promoted)).toEqual([]);
    const client = await connect(cluster, 1, clientToken);
    expect(await client.request("A survivor 30 0 s1")).toMatch(/^A survivor \d+ s1$/);
  });

  it("cannot push an epoch onto a node (a u64 epoch, or one an hour ahead of the clock)", async () => {
    const cluster = await start(clientToken);
    const before = await snapshot(cluster, 0, clientToken);
    const bricking = "!B 127.0.0.1:37432 standby 18446744073709551615 - 1";
    expectRefused(
      await forge(
        cluster,
        0,
        clientToken,
        Array.from({ length: 50 }, () => bricking),
      ),
    );
    // In the layout and within a day of the clock: before peers authenticated, this was stored.
    const ahead = composeEpoch(clockRound(Date.now()) + 3600n, 1);
    expectRefused(
      await forge(cluster, 0, clientToken, [`!B ${cluster.advertised(1)} standby ${ahead} - ${ahead}`]),
    );
    expect(await snapshot(cluster, 0, clientToken)).toEqual(before);
    const client = await connect(cluster, 0, clientToken);
    expect(await client.request("A still:serving 30 0 s1")).toMatch(/^A still:serving \d+ s1$/);
  });
});

describe("random peer frames on a client connection", () => {
  it("are refused without changing the node, whatever they hold", async () => {
    const cluster = await start(undefined);
    const before = await snapshot(cluster, 1, undefined);
    const since = cluster.nodes[1]!.logs.length;
    const address = fc.constantFrom(cluster.advertised(0), cluster.advertised(1), "127.0.0.1:1");
    const number = fc.oneof(
      fc.constantFrom("0", "1", "1000", "1099511627775", "18446744073709551615", "-1", "x", ""),
      fc.bigInt({ min: 0n, max: 2n ** 64n }).map(String),
    );
    const field = fc.oneof(address, number, fc.constantFrom("active", "standby", "-", "k"));
    const frame = fc
      .tuple(
        fc.constantFrom("J", "B", "S", "h", "s", "G", "F", "X", "P", "O", "K", "N", "C", "V", "Z", ""),
        fc.array(field, { maxLength: 6 }),
      )
      .map(([verb, fields]) => [`!${verb}`, ...fields].join(" "));
    await fc.assert(
      fc.asyncProperty(fc.array(frame, { minLength: 1, maxLength: 5 }), async (lines) => {
        const outcome = await forge(cluster, 1, undefined, lines);
        expect(outcome.closed).toBe(true);
        expect(outcome.replies.at(-1)).toMatch(/^E \? - PEER_(NOT_AUTHENTICATED|AUTH_FAILED) - /);
      }),
      { numRuns: 25, seed: 4242 },
    );
    expect(await snapshot(cluster, 1, undefined)).toEqual(before);
    expect(roleChangesSince(cluster.nodes[1]!, since)).toEqual([]);
  });
});
