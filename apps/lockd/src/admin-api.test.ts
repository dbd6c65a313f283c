import { readFileSync } from "node:fs";
import { LineClient, LockdCluster, LockdProcess } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { LocksPage } from "./locks-route.js";

/**
 * The admin API beyond /status: /locks (paging, prefix, limits, holder), /readyz on every role,
 * /version. Real lockd processes, real HTTP.
 */
const ADMIN_TOKEN = "admin-token-of-24-chars!";
const disposables: Array<{ dispose(): Promise<void> }> = [];
const clients: LineClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const item of disposables.splice(0)) await item.dispose();
});

async function startLockd(): Promise<{ lockd: LockdProcess; get: (path: string) => Promise<Response> }> {
  const lockd = await LockdProcess.start({ admin: true, env: { LOCKD_ADMIN_TOKEN: ADMIN_TOKEN } });
  disposables.push(lockd);
  const get = (path: string) =>
    fetch(`http://127.0.0.1:${lockd.adminPort}${path}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
  return { lockd, get };
}

async function connect(port: number): Promise<LineClient> {
  const client = await LineClient.connect(port);
  clients.push(client);
  return client;
}

/** A 3-node cluster with admin servers: node 0 serves, nodes 1 and 2 follow it. */
async function startCluster(): Promise<LockdCluster> {
  const cluster = await LockdCluster.start({ nodes: 3, args: ["--admin", "127.0.0.1:0"] });
  disposables.push(cluster);
  await cluster.nodes[0]!.waitForServing({ since: 0 });
  await Promise.all(
    cluster.nodes.slice(1).map((node) => node.waitForFollowing(cluster.advertised(0), { since: 0 })),
  );
  return cluster;
}

/** Every page of /locks with `query`, following nextCursor. */
async function allPages(get: (path: string) => Promise<Response>, query: string): Promise<LocksPage[]> {
  const pages: LocksPage[] = [];
  let cursor: string | null = null;
  do {
    const response = await get(`/locks?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    expect(response.status).toBe(200);
    const page = (await response.json()) as LocksPage;
    pages.push(page);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return pages;
}

describe("GET /locks", () => {
  it("pages held keys in byte order with token, lease left, waiters and the holder's address", async () => {
    const { lockd, get } = await startLockd();
    const holder = await connect(lockd.port);
    const keys = ["job:\u{1f512}", "job:\u{e000}", "job:b", "job:a", "other:x", "job:é", "jo"];
    const tokens = new Map<string, string>();
    for (const key of keys) tokens.set(key, (await holder.request(`A ${key} 60 0`)).split(" ")[2]!);
    const waiter = await connect(lockd.port);
    waiter.send("A job:b 60 0");
    // The waiter is queued once a second acquire from it is answered after it (replies keep order).
    expect(await waiter.request("A queued-marker 60 0")).toMatch(/^A queued-marker /);

    const pages = await allPages(get, "prefix=job:&limit=2");
    expect(pages.map((page) => page.locks.length)).toEqual([2, 2, 1]);
    expect(pages.at(-1)!.nextCursor).toBeNull();
    const listed = pages.flatMap((page) => page.locks);
    const jobKeys = keys.filter((key) => key.startsWith("job:"));
    // UTF-8 byte order: U+E000 (EE 80 80) before U+1F512 (F0 9F 94 92), unlike JavaScript's sort.
    expect(listed.map((lock) => lock.key)).toEqual(
      [...jobKeys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
    );
    const local = `${holder.socket.localAddress}:${holder.socket.localPort}`;
    for (const lock of listed) {
      expect(lock.token).toBe(tokens.get(lock.key));
      expect(lock.holder).toBe(local);
      expect(lock.leaseRemainingMs).toBeGreaterThan(0);
      expect(lock.leaseRemainingMs).toBeLessThanOrEqual(60_000);
      expect(lock.waiters).toBe(lock.key === "job:b" ? 1 : 0);
    }
    const everything = (await allPages(get, "limit=1000")).flatMap((page) => page.locks);
    expect(everything.map((lock) => lock.key)).toContain("queued-marker");
    expect(everything).toHaveLength(keys.length + 1);
    // A released key leaves the listing.
    expect(await holder.request(`R job:a ${tokens.get("job:a")}`)).toMatch(/^R job:a 1/);
    const after = (await allPages(get, "prefix=job:a")).flatMap((page) => page.locks);
    expect(after).toEqual([]);
  });

  it("answers a prefix that matches nothing with an empty last page, and defaults limit to 100", async () => {
    const { lockd, get } = await startLockd();
    const holder = await connect(lockd.port);
    holder.send(Array.from({ length: 150 }, (_, i) => `A k${String(i).padStart(3, "0")} 60 0`).join("\n"));
    for (let i = 0; i < 150; i++) expect(await holder.next()).toMatch(/^A /);
    expect(await (await get("/locks?prefix=nothing")).json()).toEqual({ locks: [], nextCursor: null });
    const first = (await (await get("/locks")).json()) as LocksPage;
    expect(first.locks).toHaveLength(100);
    expect(first.nextCursor).not.toBeNull();
    const second = (await (await get(`/locks?cursor=${first.nextCursor}`)).json()) as LocksPage;
    expect(second.locks.map((lock) => lock.key)[0]).toBe("k100");
    expect(second.nextCursor).toBeNull();
  });

  it("refuses a bad limit or cursor with 400 and a stable code, and asks for the admin token", async () => {
    const { lockd, get } = await startLockd();
    for (const limit of ["0", "1001", "-1", "ten", "1.5", ""]) {
      const response = await get(`/locks?limit=${limit}`);
      expect(response.status, limit).toBe(400);
      expect(await response.json(), limit).toMatchObject({ statusCode: 400, code: "BAD_LIMIT" });
    }
    expect((await get("/locks?limit=1000")).status).toBe(200);
    for (const cursor of ["zz", "k", "k!!", "k_w"]) {
      const response = await get(`/locks?cursor=${encodeURIComponent(cursor)}`);
      expect(response.status, cursor).toBe(400);
      expect(await response.json(), cursor).toMatchObject({ statusCode: 400, code: "BAD_CURSOR" });
    }
    expect((await fetch(`http://127.0.0.1:${lockd.adminPort}/locks`)).status).toBe(401);
  });
});

describe("GET /version and /readyz", () => {
  it("reports lockd's and Node's versions", async () => {
    const { get } = await startLockd();
    const version = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;
    expect(await (await get("/version")).json()).toEqual({ version, node: process.versions.node });
  });

  it("is ready on a single node that serves, without the admin token", async () => {
    const { lockd } = await startLockd();
    const response = await fetch(`http://127.0.0.1:${lockd.adminPort}/readyz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ready: true, role: "active", reason: "active and serving" });
  });

  it("is ready on the active and on synced standbys, and not on standbys whose link to the active is down", async () => {
    const cluster = await startCluster();
    const readyz = async (i: number) => {
      const response = await fetch(`http://127.0.0.1:${cluster.nodes[i]!.adminPort}/readyz`);
      return {
        status: response.status,
        body: (await response.json()) as { ready: boolean; role: string; reason: string },
      };
    };
    /** Polls: readiness follows heartbeats, which no log line announces. */
    const until = async (i: number, ready: boolean) => {
      for (;;) {
        const answer = await readyz(i);
        if (answer.body.ready === ready) return answer;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    expect(await until(0, true)).toEqual({
      status: 200,
      body: { ready: true, role: "active", reason: "active and serving" },
    });
    const standby = await until(1, true);
    expect(standby).toEqual({
      status: 200,
      body: {
        ready: true,
        role: "standby",
        reason: `standby in sync with the active ${cluster.advertised(0)}`,
      },
    });
    // A standby lists its replica of the active's table: same token, no holder address known.
    const client = await connect(cluster.nodes[0]!.port);
    const token = (await client.request("A replicated:key 60 0 rk1")).split(" ")[2];
    const listed = async () => {
      for (;;) {
        const response = await fetch(
          `http://127.0.0.1:${cluster.nodes[1]!.adminPort}/locks?prefix=replicated:`,
        );
        const page = (await response.json()) as LocksPage;
        if (page.locks.length > 0) return page;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    expect((await listed()).locks).toEqual([
      {
        key: "replicated:key",
        token,
        leaseRemainingMs: expect.any(Number),
        waiters: 0,
        holder: null,
        mode: "exclusive",
        limit: null,
        holders: [{ token, leaseRemainingMs: expect.any(Number), holder: null, slot: null }],
      },
    ]);
    // Cut every link into the active: the standbys still hear its heartbeats (its own links are
    // up), so nobody promotes, but their links to it are down: not in sync. A stable state.
    cluster.isolate(0);
    for (const i of [1, 2]) {
      const cut = await until(i, false);
      expect(cut).toEqual({
        status: 503,
        body: {
          ready: false,
          role: "standby",
          reason: `standby: no link to the active ${cluster.advertised(0)}`,
        },
      });
    }
    expect((await readyz(0)).body.ready).toBe(true);
    cluster.heal();
    for (const i of [1, 2]) expect((await until(i, true)).status).toBe(200);
  });
});

describe("a standby's epoch", () => {
  it("is the epoch of the active it follows, in I, in /status and in its own peer row, across a failover and a restart", async () => {
    const cluster = await startCluster();
    const status = async (i: number) =>
      (await (await fetch(`http://127.0.0.1:${cluster.nodes[i]!.adminPort}/status`)).json()) as {
        role: string;
        epoch: string;
        epochOf: string | null;
        cluster: { peers: Array<{ address: string; self: boolean; epoch: string; follows: string | null }> };
      };
    /** Polls: a standby learns the active's epoch from its heartbeats, which no log line announces. */
    const reports = async (i: number, active: number) => {
      const epoch = (await cluster.info(active)).epoch!;
      for (;;) {
        const [info, answer] = await Promise.all([cluster.info(i), status(i)]);
        const self = answer.cluster.peers.find((peer) => peer.self)!;
        if (info.epoch === epoch && answer.epoch === epoch && self.epoch === epoch) return answer;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const epoch0 = (await cluster.info(0)).epoch!;
    expect(BigInt(epoch0)).toBeGreaterThan(0n);
    for (const i of [1, 2]) {
      const answer = await reports(i, 0);
      expect(answer).toMatchObject({ role: "standby", epoch: epoch0, epochOf: cluster.advertised(0) });
    }
    expect((await status(0)).epochOf).toBe(cluster.advertised(0));
    const metrics = await (await fetch(`http://127.0.0.1:${cluster.nodes[1]!.adminPort}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`^lockd_epoch ${epoch0}$`, "m"));
    // The active's page sees whom each standby follows, and shows that active's epoch for it.
    for (const peer of (await status(0)).cluster.peers.filter((peer) => !peer.self)) {
      for (;;) {
        const row = (await status(0)).cluster.peers.find((other) => other.address === peer.address)!;
        if (row.follows === cluster.advertised(0) && row.epoch === epoch0) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }

    const since = cluster.nodes[1]!.logs.length;
    await cluster.nodes[0]!.kill("SIGKILL");
    await cluster.nodes[1]!.waitForServing({ since });
    const epoch1 = (await cluster.info(1)).epoch!;
    expect(BigInt(epoch1)).toBeGreaterThan(BigInt(epoch0));
    expect(await reports(2, 1)).toMatchObject({ epoch: epoch1, epochOf: cluster.advertised(1) });
    // Restarted, node 0 is a standby of node 1: it reports node 1's epoch, not the one it last had.
    const restartedAt = cluster.nodes[0]!.logs.length;
    await cluster.restart(0);
    await cluster.nodes[0]!.waitForFollowing(cluster.advertised(1), { since: restartedAt });
    expect(await reports(0, 1)).toMatchObject({
      role: "standby",
      epoch: epoch1,
      epochOf: cluster.advertised(1),
    });
  }, 60_000);
});
