import { once } from "node:events";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { LockClient, LockLostError } from "./index.js";
import { eventually, nextEvent } from "./integration.test.support.js";

/**
 * A grant that arrives after most of the lease is refreshed by one extension before acquire()
 * resolves (the lease is only known to run from the acquire's write). A lockd that refuses that
 * extension cannot be arranged on purpose, so a scripted server plays it: it grants every `A` after
 * `grantDelayMs` and answers `X` with `extended`, or refuses it with that error code.
 */
async function scriptedServer(grantDelayMs: number, extended: 0 | 1 | "SLOT_MOVING", extendDelayMs = 0) {
  const lines: string[] = [];
  const sockets = new Set<Socket>();
  const extendReply = (key: string | undefined, id: string | undefined) =>
    extended === "SLOT_MOVING"
      ? `E X ${key} SLOT_MOVING ${id} slot 1 is moving to another cluster\n`
      : `X ${key} ${extended}\n`;
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.setEncoding("utf8");
    let buffered = "";
    socket.on("data", (chunk: string) => {
      buffered += chunk;
      for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 1);
        lines.push(line);
        const [verb, key, , , id] = line.split(" ");
        if (verb === "A") setTimeout(() => socket.write(`A ${key} 5 ${id}\n`), grantDelayMs);
        else if (verb === "X") setTimeout(() => socket.write(extendReply(key, id)), extendDelayMs);
        else if (verb === "R") socket.write(`R ${key} 0\n`);
        else if (verb === "P") socket.write("P\n");
      }
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    lines,
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

describe("a grant that arrives late", () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("rejects acquire with LockLostError (LOCK_LOST) when the server refuses the refresh; nothing is held", async () => {
    // 150 ms of a 300 ms lease gone before the grant: more than the third that triggers a refresh.
    const server = await scriptedServer(150, 0);
    cleanups.push(() => server.close());
    const client = new LockClient({ servers: [server.address] });
    cleanups.push(() => client.close());
    const lostEvent = nextEvent(client, "lockLost");
    const error = await client.acquire("late:refused", { leaseMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect(error).toMatchObject({ code: "LOCK_LOST", key: "late:refused", token: 5n });
    expect((await lostEvent).error).toBe(error);
    const verbs = server.lines.map((line) => line.split(" ")[0]);
    // Refused: the token holds nothing any more, so there is nothing to release.
    expect(verbs).toEqual(["A", "X"]);
  });

  it("rejects with LockLostError, not ClientClosedError, when the refresh is confirmed only after its lease ran out", async () => {
    // The refresh (X) is answered 1, but 400 ms after its write: past the 300 ms lease it asked for.
    const server = await scriptedServer(150, 1, 400);
    cleanups.push(() => server.close());
    const client = new LockClient({ servers: [server.address], answerTimeoutMs: 0 });
    cleanups.push(() => client.close());
    const error = await client.acquire("late:too-late", { leaseMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect(error).toMatchObject({ code: "LOCK_LOST", key: "late:too-late", token: 5n });
  });

  it("rejects with LockLostError when the refresh is refused SLOT_MOVING (the key's slot began moving), and releases the grant", async () => {
    const server = await scriptedServer(150, "SLOT_MOVING");
    cleanups.push(() => server.close());
    const client = new LockClient({ servers: [server.address] });
    cleanups.push(() => client.close());
    const error = await client.acquire("late:moving", { leaseMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect(error).toMatchObject({ key: "late:moving", token: 5n, cause: { serverCode: "SLOT_MOVING" } });
    // Refused, not lost on the server: the grant is still held there until released.
    await eventually(() => server.lines.some((line) => line.startsWith("R ")));
    expect(server.lines.map((line) => line.split(" ")[0])).toEqual(["A", "X", "R"]);
  });
});
