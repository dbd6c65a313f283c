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

  it("keeps connections that have not authenticated from holding the slots an authenticating client needs", async () => {
    const secret = "a-secret-of-24-characters";
    const server = await serve({
      authToken: secret,
      limits: { maxConnections: 4, maxUnauthenticated: 2, authTimeoutMs: 60_000, idleTimeoutMs: 0 },
    });
    const silent = [];
    for (let i = 0; i < 4; i++) {
      const c = await client(server);
      expect(await c.request("P")).toBe("P"); // accepted and served: it holds a slot
      silent.push(c);
    }
    const wellBehaved = await client(server);
    expect(await wellBehaved.request(`H ${secret}`)).toBe("H");
    expect(await wellBehaved.request("A k 30 0")).toMatch(/^A k \d+$/);
    // Each newcomer took the slot of the oldest connection that had not authenticated.
    for (const c of silent.slice(0, 3)) {
      expect(await c.next()).toMatch(/^E \? - TOO_MANY_UNAUTHENTICATED - /);
      await c.closed;
    }
    expect(silent[3]!.buffered).toEqual([]);
    expect(await silent[3]!.request("P")).toBe("P");
  });
});
