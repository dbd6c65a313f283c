import { LockdCluster } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";

/**
 * A stopping active stops reading its clients while it hands off; requests that arrive meanwhile
 * wait unread in their sockets. Once the successor has acknowledged, they are answered with a
 * redirect to it (`M`), not dropped with the connection when the process exits (the client would
 * only find out then, and try again from scratch).
 */
describe("requests sent to an active while it hands off", () => {
  let cluster: LockdCluster | undefined;
  afterEach(async () => {
    await cluster?.dispose();
    cluster = undefined;
  });

  it.each([
    ["", []],
    [" (--fast-io)", ["--fast-io"]],
  ])("are answered with a redirect to the successor%s", { timeout: 60_000 }, async (_, io) => {
    // A slow link into node 1 (the successor) makes the handoff take a while: the window to test.
    cluster = await LockdCluster.start({
      nodes: 3,
      args: ["--heartbeat-interval", "0.1", "--peer-timeout", "3", ...io],
    });
    await cluster.nodes[0]!.waitForServing({ since: 0 });
    const holder = await cluster.connect(0);
    expect(await holder.request("A pending:held 30 0")).toMatch(/^A pending:held \d+/);
    while ((await cluster.info(1)).keys !== "1") await new Promise((resolve) => setTimeout(resolve, 20));

    const client = await cluster.connect(0);
    cluster.proxies[1]!.delayMs = 400;
    const exited = cluster.nodes[0]!.stop();
    await cluster.nodes[0]!.waitForLog((entry) => entry.msg === "stopping");
    // Node 0 has stopped reading (the handoff began as it logged this): this waits in its socket.
    client.send("A pending:new 30 0 req-1");
    expect(await client.next()).toBe(`M A pending:new ${cluster.advertised(1)} req-1`);
    expect(await exited).toEqual({ code: 0, signal: null });
  });
});
