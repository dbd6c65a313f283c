import { LockdProcess } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { LockClient, type LockClientOptions, NoServerError } from "./index.js";
import { allConnected, eventually, holdKey, nextEvent, serverCounts } from "./integration.test.support.js";

/**
 * The client while its only lockd restarts (killed, then started again on the same port): what an
 * acquire with a wait budget does with `waitForReady` (the wait covers the restart) and without it
 * (the seed's rule: every connection tried, then NoServerError). And close() after a lock was lost
 * on a stopped lockd, which must not wait for answers nobody needs.
 */
describe("LockClient across a lockd restart", () => {
  const cleanup: Array<() => Promise<unknown> | unknown> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function start(options: Partial<LockClientOptions> = {}) {
    const lockd = await LockdProcess.start();
    cleanup.push(() => lockd.dispose());
    const client = new LockClient({ servers: [lockd.address], ...options });
    cleanup.push(() => client.close());
    await allConnected(client);
    return { lockd, client };
  }

  /** Kills lockd and waits until the client saw both of its connections go. */
  async function kill(lockd: LockdProcess, client: LockClient): Promise<void> {
    const dropped = Promise.all([
      nextEvent(client, "disconnect", (event) => event.connection === 0),
      nextEvent(client, "disconnect", (event) => event.connection === 1),
    ]);
    await lockd.kill("SIGKILL");
    await dropped;
  }

  it("an acquire with waitForReady made while lockd is down gets the lock once lockd is back", async () => {
    const { lockd, client } = await start();
    await kill(lockd, client);
    const refused = nextEvent(client, "connectFailed");
    const acquiring = client.acquire(`restart:down:${process.pid}`, {
      leaseMs: 30_000,
      waitMs: 30_000,
      waitForReady: true,
    });
    // It tried, found no lockd, and keeps trying within its wait.
    await refused;
    await lockd.restart();
    const lock = await acquiring;
    expect(lock.held).toBe(true);
    expect(await lock.release()).toBe(true);
  });

  it("an acquire queued when lockd is killed is asked again, with its id, and granted after the restart", async () => {
    const { lockd, client } = await start();
    const key = `restart:queued:${process.pid}`;
    const holder = await holdKey(lockd, key);
    cleanup.push(() => holder.close());
    const acquiring = client.acquire(key, { leaseMs: 30_000, waitMs: 30_000, waitForReady: true });
    await eventually(async () => (await serverCounts(lockd)).waiters === 1);
    const refused = nextEvent(client, "connectFailed");
    await kill(lockd, client);
    await refused;
    await lockd.restart();
    // The holder's lock went with the process; the waiter, asked again after the restart, gets it.
    const lock = await acquiring;
    expect(lock.held).toBe(true);
    expect(await lock.release()).toBe(true);
  });

  it("without waitForReady (the default) an acquire fails with NoServerError once every connection was tried", async () => {
    const { lockd, client } = await start();
    await kill(lockd, client);
    const error = await client
      .acquire(`restart:default:${process.pid}`, { leaseMs: 30_000, waitMs: 30_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoServerError);
    expect((error as Error).message).not.toMatch(/0 tries/);
  });

  it("with waitForReady, a wait shorter than the outage ends in NoServerError that says so", async () => {
    const { lockd, client } = await start({ waitForReady: true });
    await kill(lockd, client);
    const error = await client
      .acquire(`restart:short:${process.pid}`, { leaseMs: 30_000, waitMs: 500 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoServerError);
    expect((error as Error).message).toMatch(/within the 500 ms wait/);
    expect(((error as Error).cause as NodeJS.ErrnoException).code).toBe("ECONNREFUSED");
  });

  it("close() after a lock was lost on a stopped lockd does not wait for the answers to its extensions", async () => {
    // A release window far beyond this test's patience: only not waiting lets close() finish.
    const { lockd, client } = await start({ releaseRetryMs: 600_000 });
    await client.acquire(`restart:lost:${process.pid}`, { leaseMs: 1_000, autoExtend: true });
    const lost = nextEvent(client, "lockLost");
    lockd.pause();
    cleanup.push(() => lockd.resume());
    await lost;
    // The extensions written to the stopped lockd are still unanswered; the lock is gone anyway.
    await client.close();
    expect(client.closed).toBe(true);
  });
});
