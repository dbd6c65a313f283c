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
});
