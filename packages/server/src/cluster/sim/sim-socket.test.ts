import { describe, expect, it } from "vitest";
import { AppHost, SimSocket } from "./sim-socket.js";
import { SimWorld } from "./world.js";

/**
 * The socket @lock/client gets in the simulator: what it emits for what the nemesis does to a node,
 * in the order a `net.Socket` would. Driven by the world's clock: no sleeps.
 */
async function startedWorld() {
  const world = new SimWorld({ seed: 3, nodes: 2 });
  for (const node of world.nodes) node.start();
  await world.runFor(2_000, () => world.node(0).serving);
  const host = new AppHost("c0", () => world.appRuns());
  world.network.addHost(host);
  return { world, host };
}

/** A socket to `address` and the events it emitted, in order. */
function open(world: SimWorld, host: AppHost, address: string) {
  const events: string[] = [];
  const socket = new SimSocket(world.network, host, { host: address.split(":")[0]!, port: 7420, address });
  socket.on("connect", () => events.push("connect"));
  socket.on("data", (chunk) => events.push(`data ${Buffer.from(chunk).toString().trim()}`));
  socket.on("error", (error) => events.push(`error ${(error as NodeJS.ErrnoException).code}`));
  socket.on("close", () => events.push("close"));
  return { socket, events };
}

describe("SimSocket", () => {
  it("connects, carries what was written before it opened, and closes once its node is killed", async () => {
    const { world, host } = await startedWorld();
    const { socket, events } = open(world, host, "n0:7420");
    socket.write("P\n");
    await world.runFor(100, () => events.length >= 2);
    expect(events).toEqual(["connect", "data P"]);
    world.node(0).kill();
    await world.runFor(100, () => events.includes("close"));
    expect(events.slice(2)).toEqual(["close"]);
    expect(socket.destroyed).toBe(true);
    expect(socket.write("P\n")).toBe(false);
  });

  it("a dial to a node that is down, stopped or cut off is refused after a round trip", async () => {
    const { world, host } = await startedWorld();
    world.node(1).kill();
    world.node(0).pause();
    world.network.cut("c0", "n0:7420");
    for (const address of ["n1:7420", "n0:7420", "n9:7420"]) {
      const { events } = open(world, host, address);
      expect(events).toEqual([]);
      await world.runFor(100, () => events.includes("close"));
      expect(events).toEqual(["error ECONNREFUSED", "close"]);
    }
  });

  it("destroy closes on the next tick, and the node sees the connection go", async () => {
    const { world, host } = await startedWorld();
    const { socket, events } = open(world, host, "n0:7420");
    await world.runFor(100, () => events.includes("connect"));
    expect(world.node(0).sessions.size).toBe(1);
    socket.destroy();
    expect(events).toEqual(["connect"]);
    await new Promise<void>((resolve) => process.nextTick(resolve));
    expect(events).toEqual(["connect", "close"]);
    await world.runFor(100, () => world.node(0).sessions.size === 0);
    expect(world.node(0).sessions.size).toBe(0);
  });
});
