import { once } from "node:events";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { client, onCleanup, serve } from "./serve.test.data.js";

/** Writes one byte of a line that never ends to each client every few milliseconds, as slowloris does. */
function drip(clients: ReadonlyArray<{ socket: { writable: boolean; write(bytes: string): unknown } }>) {
  const timer = setInterval(() => {
    for (const c of clients) if (c.socket.writable) c.socket.write("A");
  }, 5);
  onCleanup(() => clearInterval(timer));
}

describe("slow and unauthenticated connections", () => {
  it("closes a connection whose line never ends, however many bytes it trickles", async () => {
    const server = await serve({ limits: { idleTimeoutMs: 100, maxConnections: 2 } });
    const slow = [await client(server), await client(server)];
    drip(slow);
    for (const c of slow) {
      expect(await c.next()).toMatch(/^E \? - IDLE_TIMEOUT - /);
      await c.closed;
    }
    await expect.poll(() => server.connectionCount).toBe(0);
    const wellBehaved = await client(server);
    expect(await wellBehaved.request("P in")).toBe("P in");
  }, 5_000);

  it("drops a connection it closed even if the client never closes its end", async () => {
    const server = await serve({ limits: { idleTimeoutMs: 100 } });
    // allowHalfOpen: the client keeps its side open after the server's FIN, as a slowloris tool may.
    const socket = connect({ port: server.port, host: "127.0.0.1", allowHalfOpen: true });
    onCleanup(() => {
      socket.destroy();
    });
    socket.resume();
    await once(socket, "end");
    await expect.poll(() => server.connectionCount, { timeout: 5_000 }).toBe(0);
  });
});
