import { describe, expect, it } from "vitest";
import { client, serve } from "./serve.test.data.js";

/** Watching a key (`O`, `U`) over real sockets: the answer, the pushes, the end and the caps. */
describe("O and U over real sockets", () => {
  it("answers the state at once and pushes every holder change to the watcher only", async () => {
    const server = await serve();
    const watcher = await client(server);
    const holder = await client(server);
    const bystander = await client(server);
    expect(await watcher.request("O k")).toBe("O k 0 - 0");
    const granted = await holder.request("A k 30 0 secret-1");
    const token = BigInt(granted.split(" ")[2]!);
    expect(await watcher.next()).toBe(`O k ${token} x 1`);
    holder.send("A k 30 0 secret-2");
    // The release hands the key to the waiter, whose grant is answered before the release.
    expect(await holder.request(`R k ${token}`)).toBe(`A k ${token + 1n} secret-2`);
    expect(await holder.next()).toBe("R k 1");
    // The hand-off is one push, with the new token and never the request id.
    expect(await watcher.next()).toBe(`O k ${token + 1n} x 1`);
    expect(await holder.request(`R k ${token + 1n}`)).toBe("R k 1");
    expect(await watcher.next()).toBe("O k 0 - 0");
    expect(await watcher.request("U k")).toBe("U k 1");
    expect(await holder.request("A k 30 0 secret-3")).toMatch(/^A k \d+ secret-3$/);
    expect(await watcher.request("P after")).toBe("P after");
    expect(await bystander.request("P after")).toBe("P after");
    expect(await watcher.request("U k")).toBe("U k 0");
  });

  it("re-answers a repeated watch with the current state and reports shared holders", async () => {
    const server = await serve();
    const c = await client(server);
    expect(await c.request("O doc")).toBe("O doc 0 - 0");
    const reader = await c.request("Q doc s 30 0 r1");
    // Pushes and replies share the connection: the push of the grant comes before its reply.
    const token = BigInt(reader.split(" ")[2]!);
    expect(reader).toBe(`O doc ${token} s 1`);
    expect(await c.next()).toBe(`Q doc ${token} - r1`);
    expect(await c.request("O doc")).toBe(`O doc ${token} s 1`);
  });

  it("refuses watches past the per-connection and total caps, and frees them with the connection", async () => {
    const server = await serve({ limits: { maxWatchesPerConnection: 2, maxWatches: 3 } });
    const a = await client(server);
    const b = await client(server);
    expect(await a.request("O k1")).toBe("O k1 0 - 0");
    expect(await a.request("O k2")).toBe("O k2 0 - 0");
    expect(await a.request("O k3")).toMatch(/^E O k3 TOO_MANY_CONNECTION_WATCHES - /);
    expect(await a.request("O k2")).toBe("O k2 0 - 0");
    expect(await b.request("O k1")).toBe("O k1 0 - 0");
    expect(await b.request("O k2")).toMatch(/^E O k2 TOO_MANY_WATCHES - /);
    // `I` reports the node's watches against --max-watches.
    expect(await b.request("I")).toMatch(/ watches=3 /);
    a.close();
    await a.closed;
    // The server sees the close on its own turn: ask until it has.
    let answer = await b.request("O k2");
    while (answer.startsWith("E ")) answer = await b.request("O k2");
    expect(answer).toBe("O k2 0 - 0");
    expect(server.node.watches.count).toBe(2);
    expect(await b.request("I")).toMatch(/ watches=2 /);
  });
});
