import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { LockdCluster, LockdProcess, REPO_ROOT } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AbortError, LockClient } from "./index.js";
import { eventually, holdKey, serverCounts } from "./integration.test.support.js";

/**
 * Leader election against real lockd processes: a leader whose own process dies (kill -9) is
 * replaced once its lease runs out, with a higher term; a leader rides out kill -9 of the active
 * lockd with the same term; a campaign is cancelled by its signal; close() ends a leadership.
 */

const CLIENT_MAIN = pathToFileURL(join(REPO_ROOT, "packages", "client", "dist", "index.js")).href;

// A candidate in a process of its own (the built client): elects, prints `elected TERM`, and leads
// until it is killed.
const CANDIDATE = `
import { LockClient } from ${JSON.stringify(CLIENT_MAIN)};
const [servers, key, leaseMs] = process.argv.slice(1);
const client = new LockClient({ servers: servers.split(",") });
const leader = await client.elect(key, { leaseMs: Number(leaseMs) });
console.log("elected " + leader.term);
leader.on("lost", ({ reason }) => console.log("lost " + reason));
setInterval(() => {}, 1000);
`;

/** Starts CANDIDATE and resolves with its process and term once it is elected. */
async function candidateProcess(
  servers: string,
  key: string,
  leaseMs: number,
): Promise<{ child: ChildProcess; term: bigint }> {
  const child = spawn(
    process.execPath,
    ["--input-type=module", "-e", CANDIDATE, servers, key, String(leaseMs)],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const lines = createInterface({ input: child.stdout! });
  const [line] = (await Promise.race([
    once(lines, "line"),
    once(child, "exit").then(([code]) => {
      throw new Error(`the candidate exited ${code} before it was elected`);
    }),
  ])) as [string];
  expect(line).toMatch(/^elected \d+$/);
  return { child, term: BigInt(line.split(" ")[1]!) };
}

describe("elect against lockd", () => {
  const cleanup: Array<() => Promise<unknown> | unknown> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  function client(servers: string[]): LockClient {
    const created = new LockClient({ servers });
    cleanup.push(() => created.close());
    return created;
  }

  it("replaces a leader whose process was killed (kill -9) once its lease ran out, with a higher term; observe() sees both", async () => {
    const lockd = await LockdProcess.start();
    cleanup.push(() => lockd.dispose());
    const leaseMs = 1_000;
    const first = await candidateProcess(lockd.address, "el:killed", leaseMs);
    cleanup.push(() => first.child.kill("SIGKILL"));
    // A follower that watches the key, not a candidate: it learns each leader's term as it comes.
    const watcher = client([lockd.address]).observe("el:killed");
    const termsSeen: bigint[] = [];
    const seen = (async () => {
      for await (const state of watcher) {
        if (state.held) termsSeen.push(state.token);
        if (termsSeen.length === 2) return;
      }
    })();
    const candidate = client([lockd.address]);
    // Queued behind the leader before it dies, so the grant comes when its lease ends on the server.
    const campaign = candidate.elect("el:killed", { leaseMs, waitMs: leaseMs * 5 });
    await eventually(async () => (await serverCounts(lockd)).waiters === 1);
    first.child.kill("SIGKILL");
    // Within the lease (and some slack, with waitMs as the bound): LockTimeoutError otherwise.
    const second = await campaign;
    expect(second.term).toBeGreaterThan(first.term);
    expect(second.leading).toBe(true);
    await seen;
    expect(termsSeen).toEqual([first.term, second.term]);
    await second.resign();
  });

  it("a leader rides out kill -9 of the active lockd (3 nodes) with the same term", async () => {
    const cluster = await LockdCluster.start({ nodes: 3 });
    cleanup.push(() => cluster.dispose());
    await cluster.settled();
    const servers = cluster.proxies.map((proxy) => proxy.address);
    const leaseMs = 2_000;
    const leader = await client(servers).elect("el:failover", { leaseMs });
    const losses: string[] = [];
    leader.on("lost", ({ reason }) => losses.push(reason));
    // The grant is on the standbys before the active dies.
    await eventually(async () => Number((await cluster.info(1)).keys) === 1);
    const promoted = cluster.nodes[1]!.waitForRole("active");
    await cluster.nodes[0]!.kill("SIGKILL");
    const killedAt = performance.now();
    await promoted;
    // An extension written after the kill was confirmed (by the new active): the lease now runs
    // past what the old active granted.
    await eventually(() => leader.expiresAt > killedAt + leaseMs, leaseMs * 5);
    expect(leader.leading).toBe(true);
    expect(losses).toEqual([]);
    // The new active still knows the leader: another candidate cannot be elected meanwhile.
    const rival = client(servers);
    await expect(rival.elect("el:failover", { leaseMs, waitMs: 200 })).rejects.toMatchObject({
      code: "LOCK_WAIT_TIMEOUT",
    });
    expect(await leader.resign()).toBe(true);
    const next = await rival.elect("el:failover", { leaseMs, waitMs: 5_000 });
    expect(next.term).toBeGreaterThan(leader.term);
    await next.resign();
  });

  it("aborting the campaign's signal withdraws it from the server; close() ends a leadership", async () => {
    const lockd = await LockdProcess.start();
    cleanup.push(() => lockd.dispose());
    const holder = await holdKey(lockd, "el:abort");
    cleanup.push(() => holder.close());
    const candidate = client([lockd.address]);
    const controller = new AbortController();
    const campaign = candidate.elect("el:abort", { leaseMs: 5_000, signal: controller.signal });
    await eventually(async () => (await serverCounts(lockd)).waiters === 1);
    controller.abort();
    await expect(campaign).rejects.toBeInstanceOf(AbortError);
    await eventually(async () => (await serverCounts(lockd)).waiters === 0);
    await holder.release();
    const leader = await candidate.elect("el:abort", { leaseMs: 5_000 });
    const lost = leader.lost;
    await candidate.close();
    expect((await lost).reason).toBe("client-closed");
    expect(leader.signal.aborted).toBe(true);
    expect((await serverCounts(lockd)).keys).toBe(0);
  });

  it("tells a leader it lost: lease-lost while no server answers, extension-refused by a lockd that lost the grant", async () => {
    const lockd = await LockdProcess.start();
    cleanup.push(() => lockd.dispose());
    const candidate = client([lockd.address]);
    const cutOff = await candidate.elect("el:cut-off", { leaseMs: 1_000 });
    // A stopped lockd answers nothing: the lease runs out on the client's clock.
    lockd.pause();
    try {
      expect((await cutOff.lost).reason).toBe("lease-lost");
    } finally {
      lockd.resume();
    }
    const forgotten = await candidate.elect("el:forgotten", { leaseMs: 3_000 });
    // A single lockd restarted (kill -9) has no holders: the leader's next extension is refused.
    await lockd.kill("SIGKILL");
    await lockd.restart();
    const loss = await forgotten.lost;
    expect(loss).toMatchObject({ reason: "extension-refused", term: forgotten.term });
    expect(forgotten.signal.reason).toBe(loss.error);
  });
});
