import { once } from "node:events";
import { connect, type Socket } from "node:net";
import type { ErrorCode } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { NO_OBSERVER } from "../observer.js";
import { client, onCleanup, serve } from "./serve.test.data.js";
import type { LockServer } from "./server.js";

/** A connection that writes requests and never reads a reply. */
async function stuckReader(server: LockServer): Promise<Socket> {
  const socket = connect({ port: server.port, host: "127.0.0.1" });
  onCleanup(() => {
    socket.destroy();
  });
  socket.on("error", () => {});
  await once(socket, "connect");
  socket.pause();
  return socket;
}

/** Resolves when `socket` closes (a reset included: `once` would reject on its error). */
function closed(socket: Socket): Promise<void> {
  return new Promise((resolve) => socket.once("close", () => resolve()));
}

function errorRecorder() {
  const errors: ErrorCode[] = [];
  return { errors, observer: { ...NO_OBSERVER, error: (code: ErrorCode) => errors.push(code) } };
}

/** Sends `I` requests (about 150 bytes of reply each) until the connection closes. */
function floodWithInfo(socket: Socket): void {
  const batch = "I\n".repeat(10_000);
  const pump = () => {
    while (!socket.destroyed && socket.write(batch)) {}
  };
  socket.on("drain", pump);
  pump();
}

describe("a client that does not read its replies", () => {
  it("is closed after the write timeout even with an acquire queued, which is withdrawn", async () => {
    const { errors, observer } = errorRecorder();
    const server = await serve({
      observer,
      limits: { writeHighWaterBytes: 64 * 1024, writeTimeoutMs: 200, idleTimeoutMs: 0 },
    });
    const holder = await client(server);
    const token = (await holder.request("A contended 30 0")).split(" ")[2];
    const stuck = await stuckReader(server);
    stuck.write("A contended 30 0 queued\n");
    floodWithInfo(stuck);
    await closed(stuck);
    expect(errors).toContain("SLOW_READER");
    await expect.poll(() => server.connectionCount).toBe(1);
    // The stuck connection's acquire left the queue with it: the release hands the key to no one.
    expect(await holder.request(`R contended ${token}`)).toBe("R contended 1");
    expect(await holder.request("I")).toMatch(/ keys=0 waiters=0 /);
  });

  it("is closed at once when its unread replies pass the hard cap", async () => {
    const { errors, observer } = errorRecorder();
    const server = await serve({
      observer,
      limits: { writeHighWaterBytes: 64 * 1024, maxUnsentBytes: 64 * 1024, writeTimeoutMs: 0 },
    });
    const stuck = await stuckReader(server);
    floodWithInfo(stuck);
    await closed(stuck);
    expect(errors).toEqual(["SLOW_READER"]);
  });

  it("keeps at most about the high-water mark and one turn of replies unsent, and others are served", async () => {
    const server = await serve({ limits: { writeHighWaterBytes: 64 * 1024, writeTimeoutMs: 0 } });
    const stuck = await Promise.all(Array.from({ length: 5 }, () => stuckReader(server)));
    for (const socket of stuck) floodWithInfo(socket);
    const other = await client(server);
    // Every stuck connection stops being read once its replies back up; the other one is answered.
    await expect.poll(() => server.backloggedCount, { timeout: 10_000 }).toBe(5);
    for (let i = 0; i < 20; i++) expect(await other.request(`P ${i}`)).toBe(`P ${i}`);
    // 1024 `I` replies of about 150 bytes each may follow the mark within one turn.
    expect(server.unsentBytes).toBeLessThanOrEqual(5 * (64 * 1024 + 1024 * 200));
    for (const socket of stuck) socket.destroy();
    await expect.poll(() => server.connectionCount).toBe(1);
    expect(server.unsentBytes).toBe(0);
  });
});
