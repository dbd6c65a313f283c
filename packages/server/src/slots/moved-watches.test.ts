import { SlotMap } from "@lock/protocol";
import { describe, expect, it } from "vitest";
import { client, serve } from "../net/serve.test.data.js";
import { endWatchesOfMovedSlots } from "./moved-watches.js";
import { SlotGate } from "./slot-gate.js";

const clusters = new Map([
  ["east", ["127.0.0.1:7001"]],
  ["west", ["127.0.0.1:7101"]],
]);
const map = (version: bigint, firstHalf: string) =>
  SlotMap.of(version, clusters, [
    { from: 0, to: 8191, cluster: firstHalf },
    { from: 8192, to: 16383, cluster: "west" },
  ]);

/** Watches and the slot map: `S` for another cluster's key, and a pushed `S O` once a key's slot moved away. */
describe("watches of a node of one of several clusters", () => {
  it("redirects a watch of another cluster's key, and ends the watches of a slot that moved away", async () => {
    const gate = new SlotGate("east");
    gate.update(map(4n, "east"));
    const server = await serve({ slots: gate });
    endWatchesOfMovedSlots(gate, server.node);
    const c = await client(server);
    expect(await c.request("O foo")).toBe("S O foo 12182 4 west 127.0.0.1:7101");
    expect(await c.request("O bar")).toBe("O bar 0 - 0");
    gate.update(map(5n, "west"));
    expect(await c.next()).toBe("S O bar 5061 5 west 127.0.0.1:7101");
    expect(server.node.watches.count).toBe(0);
    expect(await c.request("U bar")).toBe("S U bar 5061 5 west 127.0.0.1:7101");
  });
});
