import { once } from "node:events";
import { connect, createServer } from "node:net";
import { TimerQueue } from "@lock/deadline-heap";
import { LockdProcess } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { InvalidArgumentError, LockClient, type LockClientOptions, type ServerAddress } from "./index.js";
import { allConnected, nextEvent } from "./integration.test.support.js";

/**
 * The options that put the client on another runtime (the cluster simulator's network and clock):
 * `connect` opens its sockets, `timers` runs its timers, `random` draws its jitter. Against a real
 * lockd, with Node's own sockets behind `connect`.
 */
describe("LockClient on a runtime of its caller's", () => {
  const cleanup: Array<() => Promise<unknown> | unknown> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  function client(options: LockClientOptions): LockClient {
    const created = new LockClient(options);
    cleanup.push(() => created.close());
    return created;
  }

  it("refuses a connect or random that is not a function, and connect together with tls", () => {
    const servers = ["127.0.0.1:7420"];
    const bad = [
      { servers, connect: "net" },
      { servers, random: 0.5 },
      { servers, connect: () => connect(7420), tls: true },
    ] as unknown as LockClientOptions[];
    for (const options of bad) expect(() => new LockClient(options)).toThrow(InvalidArgumentError);
  });

  it("opens every connection through connect, and runs every timer on the given queue", async () => {
    const lockd = await LockdProcess.start();
    cleanup.push(() => lockd.dispose());
    const asked: ServerAddress[] = [];
    const timers = new TimerQueue();
    const locks = client({
      servers: [lockd.address],
      timers,
      connect: (server) => {
        asked.push(server);
        return connect({ host: server.host, port: server.port });
      },
    });
    await allConnected(locks);
    // A single address gets two connections.
    expect(asked).toEqual([0, 1].map(() => expect.objectContaining({ address: lockd.address })));
    const lock = await locks.acquire(`runtime:${process.pid}`, { leaseMs: 30_000 });
    // The lease's deadline (and the keepalives) wait on the queue the client was given.
    expect(timers.size).toBeGreaterThan(0);
    expect(await lock.release()).toBe(true);
    await locks.close();
    // The client stops its queue when it closes, as it does its own.
    expect(timers.size).toBe(0);
  });

  it("draws the reconnect jitter from random", async () => {
    // A port that refuses: listened on, then closed.
    const server = createServer();
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as { port: number };
    server.close();
    const locks = client({
      servers: [`127.0.0.1:${port}`],
      reconnectIntervalMs: 3_000,
      reconnectJitterMs: 1_000,
      random: () => 0.25,
    });
    const failed = await nextEvent(locks, "connectFailed");
    expect(failed.retryInMs).toBe(3_250);
  });
});
