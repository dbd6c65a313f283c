import { LineClient, LockdCluster, selfSignedCertificate } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";

/**
 * The active/standby cluster with real lockd processes: failover on kill -9, graceful handoff on
 * SIGTERM, takeover by a returning higher-priority node, demotion after a healed partition, and
 * redirects. Timing flags (50 ms heartbeats, 300 ms peer timeout) come from LockdCluster.
 */
const clusters: LockdCluster[] = [];
const clients: LineClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const cluster of clusters.splice(0)) await cluster.dispose();
});

/** Starts a cluster and waits until node 0 is active and every other node follows it. */
async function start(nodes: number): Promise<LockdCluster> {
  const cluster = await LockdCluster.start({ nodes });
  clusters.push(cluster);
  await cluster.nodes[0]!.waitForServing({ since: 0 });
  await Promise.all(
    cluster.nodes.slice(1).map((node) => node.waitForFollowing(cluster.advertised(0), { since: 0 })),
  );
  return cluster;
}

async function connect(cluster: LockdCluster, i: number): Promise<LineClient> {
  const client = await cluster.connect(i);
  clients.push(client);
  return client;
}

const tokenOf = (line: string) => BigInt(line.split(" ")[2]!);

/** Acquires `key` on node i (expects an immediate grant) and returns its token. */
async function grant(cluster: LockdCluster, i: number, key: string, lease = "30"): Promise<bigint> {
  const client = await connect(cluster, i);
  const reply = await client.request(`A ${key} ${lease} 0 ${key.replace(/[^A-Za-z0-9]/g, "")}x`);
  expect(reply).toMatch(/^A /);
  return tokenOf(reply);
}

/** Sends every line at once and returns the token (or `1`) of each reply, in order. */
async function pipeline(client: LineClient, lines: string[]): Promise<bigint[]> {
  client.send(lines.join("\n"));
  const replies: bigint[] = [];
  for (const _ of lines) {
    const reply = await client.next();
    expect(reply).toMatch(/^[AR] /);
    replies.push(tokenOf(reply));
  }
  return replies;
}

/** Polls `check` until it holds (a fact no event announces); the test timeout bounds it. */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe("lockd cluster", () => {
  it("standbys redirect to the active; a client that follows the redirect is served", async () => {
    const cluster = await start(3);
    const standby = await connect(cluster, 2);
    const redirect = await standby.request("A jobs:1 30 0 r1");
    expect(redirect).toBe(`M A jobs:1 ${cluster.advertised(0)} r1`);
    const [, port] = redirect.split(" ")[3]!.split(":");
    const followed = await LineClient.connect(Number(port));
    clients.push(followed);
    // Under heavy load the active may have stalled past --peer-timeout since it started (a standby
    // promoted for a moment, and it waits for its raised epoch): it answers NO_ACTIVE, "retry
    // shortly", as docs/protocol.md says, and a client retries. So does this test.
    let reply = "";
    await until(async () => {
      reply = await followed.request("A jobs:1 30 0 r1");
      return !reply.startsWith("E A jobs:1 NO_ACTIVE ");
    });
    expect(reply).toMatch(/^A jobs:1 \d+ r1$/);
    expect(await standby.request("I")).toMatch(/ role=standby /);
  });

  it("kill -9 of the active: a standby serves, tokens keep increasing, replicated holders can release", async () => {
    const cluster = await start(3);
    const tokens: bigint[] = [];
    for (let i = 0; i < 20; i++) tokens.push(await grant(cluster, 0, `held:${i}`));
    // Under load: the active dies while grants are streaming out, so the last ones it issued (and
    // that reached this client) may never have reached a standby.
    const burst = await connect(cluster, 0);
    burst.send(Array.from({ length: 5000 }, (_, i) => `A burst:${i} 30 0 b${i}`).join("\n"));
    tokens.push(tokenOf(await burst.next()));
    const since = cluster.nodes[1]!.logs.length;
    await cluster.nodes[0]!.kill("SIGKILL");
    await burst.closed;
    for (const line of burst.buffered) if (line.startsWith("A ")) tokens.push(tokenOf(line));
    await cluster.nodes[1]!.waitForServing({ since });

    const before = tokens.reduce((a, b) => (a > b ? a : b));
    expect(await grant(cluster, 1, "after:1")).toBeGreaterThan(before);
    const client = await connect(cluster, 1);
    // A lock granted by the dead active is still held on the new one, and released by its token.
    expect(await client.request(`R held:3 ${tokens[3]} held3x`)).toBe("R held:3 1");
    expect(await client.request(`A held:3 30 0.05 again`)).toMatch(/^A held:3 \d+ again$/);
    // The other standby follows the new active.
    const third = await connect(cluster, 2);
    expect(await third.request("A x 30 0 r")).toBe(`M A x ${cluster.advertised(1)} r`);
  });

  it("SIGTERM of the active hands off: queued acquires are redirected, none fails", async () => {
    const cluster = await start(2);
    const holder = await connect(cluster, 0);
    const token = tokenOf(await holder.request("A k 30 0 h"));
    const waiter = await connect(cluster, 0);
    waiter.send("A k 30 0 w1\nA k 30 0 w2");
    expect(await waiter.request("P sync")).toBe("P sync");
    const since = cluster.nodes[1]!.logs.length;
    const stopped = cluster.nodes[0]!.stop();
    // The queued acquires come back as redirects to the successor, not as errors.
    expect(await waiter.next()).toBe(`M A k ${cluster.advertised(1)} w1`);
    expect(await waiter.next()).toBe(`M A k ${cluster.advertised(1)} w2`);
    await cluster.nodes[1]!.waitForServing({ since });
    expect(await stopped).toEqual({ code: 0, signal: null });
    // The successor has the holder table: the holder releases there (proving it with its acquire's
    // request id, on a new connection) and a re-sent waiter gets the key.
    const moved = await connect(cluster, 1);
    moved.send("A k 30 0 w1");
    expect(await moved.request("P sync")).toBe("P sync");
    const released = await connect(cluster, 1);
    expect(await released.request(`R k ${token} h`)).toBe("R k 1");
    const handed = await moved.next();
    expect(handed).toMatch(/^A k \d+ w1$/);
    expect(tokenOf(handed)).toBeGreaterThan(token);
  });

  it("a restarted top-priority node resyncs and takes over; no token goes backwards", async () => {
    const cluster = await start(2);
    await grant(cluster, 0, "early");
    let since = cluster.nodes[1]!.logs.length;
    await cluster.nodes[0]!.kill("SIGKILL");
    await cluster.nodes[1]!.waitForServing({ since });
    const onSecond = await grant(cluster, 1, "second");
    since = cluster.nodes[0]!.logs.length;
    const sinceSecond = cluster.nodes[1]!.logs.length;
    await cluster.restart(0);
    await cluster.nodes[0]!.waitForServing({ since });
    await cluster.nodes[1]!.waitForRole("standby", { since: sinceSecond });
    const client = await connect(cluster, 0);
    // The lock granted by node 1 while node 0 was down survived the takeover. A freshly started
    // node that stalled under load (past --peer-timeout) answers NO_ACTIVE until it confirmed its
    // role: a client retries then, and so does this test, once it serves again.
    since = cluster.nodes[0]!.logs.length;
    let reply = await client.request(`R second ${onSecond} secondx`);
    if (reply.startsWith("E R second NO_ACTIVE")) {
      await cluster.nodes[0]!.waitForServing({ since });
      reply = await client.request(`R second ${onSecond} secondx`);
    }
    expect(reply).toBe("R second 1");
    expect(await grant(cluster, 0, "third")).toBeGreaterThan(onSecond);
  });

  it("after a healed partition the lower-priority active demotes and tokens exceed both sides'", async () => {
    const cluster = await start(2);
    let since = cluster.nodes[1]!.logs.length;
    cluster.isolate(0);
    cluster.isolate(1);
    await cluster.nodes[1]!.waitForServing({ since });
    // Both sides grant the same key while split.
    const left = await grant(cluster, 0, "split");
    const right = await grant(cluster, 1, "split");
    since = cluster.nodes[1]!.logs.length;
    const sinceFirst = cluster.nodes[0]!.logs.length;
    cluster.heal();
    await cluster.nodes[1]!.waitForRole("standby", { since });
    await cluster.nodes[0]!.waitForLog(
      (entry) => entry.msg === "role changed" && /raised epoch/.test(String(entry.reason)),
      { since: sinceFirst },
    );
    const highest = left > right ? left : right;
    const client = await connect(cluster, 0);
    // As above: an active that stalled under load (past --peer-timeout) answers NO_ACTIVE until it
    // confirmed its role; a client retries then, and so does this test.
    since = cluster.nodes[0]!.logs.length;
    let reply = await client.request(`R split ${left} splitx`);
    if (reply.startsWith("E R split NO_ACTIVE")) {
      await cluster.nodes[0]!.waitForServing({ since });
      reply = await client.request(`R split ${left} splitx`);
    }
    expect(reply).toBe("R split 1");
    expect(await grant(cluster, 0, "split")).toBeGreaterThan(highest);
    expect(await grant(cluster, 0, "fresh")).toBeGreaterThan(highest);
  });

  it("a standby stopped far behind resumes without promoting, catches up folded, and serves that table", async () => {
    const cluster = await start(2);
    const standby = cluster.nodes[1]!;
    const sinceStop = standby.logs.length;
    standby.pause(); // SIGSTOP: it reads nothing while the active moves on well past the window
    const active = await connect(cluster, 0);
    const keys = Array.from({ length: 3000 }, (_, i) => `fold:${i}`);
    const tokens = await pipeline(
      active,
      keys.map((key, i) => `A ${key} 30 0 a${i}`),
    );
    // Free every odd key, then take every other one of those again: three states per key.
    await pipeline(
      active,
      keys.flatMap((key, i) => (i % 2 === 1 ? [`R ${key} ${tokens[i]}`] : [])),
    );
    const retaken = keys.map((key, i) => (i % 4 === 1 ? `A ${key} 30 0 b${i}` : ""));
    const newTokens = await pipeline(
      active,
      retaken.filter((line) => line !== ""),
    );
    for (const [n, i] of keys.flatMap((_, i) => (i % 4 === 1 ? [i] : [])).entries())
      tokens[i] = newTokens[n]!;
    const held = keys.filter((_, i) => i % 4 !== 3).length;
    expect(await active.request("I")).toContain(` keys=${held} `);
    // The stall itself: longer than the peer timeout (300 ms here), so on resume every peer looks dead
    // to the standby until it reads the heartbeats waiting in its sockets.
    await new Promise((resolve) => setTimeout(resolve, 700));

    standby.resume();
    const standbyClient = await connect(cluster, 1);
    await until(async () => (await standbyClient.request("I")).includes(` keys=${held} `));
    // It heard the active's queued heartbeats before deciding anything: no promotion on resume.
    expect(standby.logs.slice(sinceStop).some((entry) => entry.msg === "role changed")).toBe(false);
    // Nor does it report the active lost: the silence was its own. The active saw the standby go.
    expect(standby.logs.slice(sinceStop).some((entry) => entry.msg === "peer lost")).toBe(false);
    await cluster.nodes[0]!.waitForLog(
      (entry) => entry.msg === "peer lost" && entry.peer === cluster.advertised(1),
      { since: 0 },
    );

    const since = standby.logs.length;
    await cluster.nodes[0]!.kill("SIGKILL");
    await standby.waitForServing({ since });
    const promoted = await connect(cluster, 1);
    for (const i of [0, 1, 2, 3, 1998, 2997, 2998, 2999]) {
      if (i % 4 === 3) expect(await promoted.request(`Y ${keys[i]} 30`)).toMatch(/^Y fold:\d+ \d+$/);
      else
        expect(await promoted.request(`R ${keys[i]} ${tokens[i]} ${i % 4 === 1 ? "b" : "a"}${i}`)).toBe(
          `R ${keys[i]} 1`,
        );
    }
  });

  it("the active logs a standby it loses (warn) and the same standby back (info), once each", async () => {
    const cluster = await start(2);
    const active = cluster.nodes[0]!;
    const standby = cluster.advertised(1);
    const isPeer = (msg: string) => (entry: Record<string, unknown>) =>
      entry.msg === msg && entry.peer === standby;
    await active.waitForLog(isPeer("peer live"), { since: 0 });
    const beforeKill = active.logs.length;
    await cluster.nodes[1]!.kill("SIGKILL");
    expect(await active.waitForLog(isPeer("peer lost"), { since: beforeKill })).toMatchObject({
      level: 40,
      role: "standby",
    });
    const beforeRestart = active.logs.length;
    await cluster.restart(1);
    expect(await active.waitForLog(isPeer("peer live"), { since: beforeRestart })).toMatchObject({
      level: 30,
    });
    // One line per transition, not one per heartbeat.
    expect(active.logs.filter(isPeer("peer lost"))).toHaveLength(1);
    expect(active.logs.filter(isPeer("peer live"))).toHaveLength(2);
  });

  it("a single survivor of three serves alone", async () => {
    const cluster = await start(3);
    const since = cluster.nodes[2]!.logs.length;
    await Promise.all([cluster.nodes[0]!.kill("SIGKILL"), cluster.nodes[1]!.kill("SIGKILL")]);
    await cluster.nodes[2]!.waitForServing({ since });
    expect(await grant(cluster, 2, "alone")).toBeGreaterThan(0n);
  });
});

describe("lockd cluster over TLS with an auth token", () => {
  it("peers authenticate and replicate over TLS", async () => {
    const certificate = selfSignedCertificate();
    try {
      const cluster = await LockdCluster.start({
        nodes: 2,
        args: [
          "--tls-cert",
          certificate.certPath,
          "--tls-key",
          certificate.keyPath,
          "--tls-ca",
          certificate.certPath,
        ],
        env: { LOCKD_AUTH_TOKEN: "cluster-secret-of-28-letters" },
      });
      clusters.push(cluster);
      await cluster.nodes[0]!.waitForServing({ since: 0 });
      await cluster.nodes[1]!.waitForFollowing(cluster.advertised(0), { since: 0 });
      expect(JSON.stringify(cluster.nodes.flatMap((node) => node.logs))).not.toContain("cluster-secret");
    } finally {
      certificate.dispose();
    }
  });
});

describe("lockd cluster misconfiguration", () => {
  it("logs an error naming the peer when it refuses the link (different auth tokens)", async () => {
    const cluster = await LockdCluster.start({
      nodes: 2,
      nodeEnv: (i) => ({
        LOCKD_AUTH_TOKEN: i === 0 ? "token-of-node-0-long-enough" : "token-of-node-1-long-enough",
      }),
    });
    clusters.push(cluster);
    const refused = await cluster.nodes[0]!.waitForLog(
      (entry) => entry.msg === "peer refused the cluster link",
      {
        since: 0,
      },
    );
    expect(refused.peer).toBe(cluster.advertised(1));
    expect(String(refused.reply)).toMatch(/AUTH_FAILED/);
    expect(JSON.stringify(refused)).not.toContain("token-of-node");
  });
});
