import { type LineClient, LockdCluster } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";

/**
 * Watching a key on real lockd processes, at the wire: the active pushes the key's changes; on a
 * graceful stop it ends the watch with a pushed redirect to its successor, whose answer to the watch
 * is the same holder; standbys redirect watches.
 */
describe("O on a lockd cluster", () => {
  let cluster: LockdCluster | undefined;
  const clients: LineClient[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await cluster?.dispose();
    cluster = undefined;
  });

  async function connect(i: number): Promise<LineClient> {
    const client = await cluster!.connect(i);
    clients.push(client);
    return client;
  }

  it("pushes changes, redirects on a standby, and hands the watch to the successor on SIGTERM", {
    timeout: 60_000,
  }, async () => {
    cluster = await LockdCluster.start({ nodes: 2 });
    await cluster.nodes[0]!.waitForServing({ since: 0 });
    await cluster.nodes[1]!.waitForFollowing(cluster.advertised(0), { since: 0 });
    const standby = await connect(1);
    expect(await standby.request("O w:1")).toBe(`M O w:1 ${cluster.advertised(0)}`);

    const watcher = await connect(0);
    const holder = await connect(0);
    expect(await watcher.request("O w:1")).toBe("O w:1 0 - 0");
    const granted = await holder.request("A w:1 30 0 h1");
    const token = granted.split(" ")[2]!;
    expect(await watcher.next()).toBe(`O w:1 ${token} x 1`);
    while ((await cluster.info(1)).keys !== "1") await new Promise((resolve) => setTimeout(resolve, 20));

    const since = cluster.nodes[1]!.logs.length;
    const stopped = cluster.nodes[0]!.stop();
    expect(await watcher.next()).toBe(`M O w:1 ${cluster.advertised(1)}`);
    await cluster.nodes[1]!.waitForServing({ since });
    expect(await stopped).toEqual({ code: 0, signal: null });

    // The successor answers the watch with the same holder (replicated), then pushes its changes.
    const moved = await connect(1);
    // A new active may hold for a moment (NO_ACTIVE, "retry shortly"), as a client retries.
    let answer = await moved.request("O w:1");
    while (answer.startsWith("E O w:1 NO_ACTIVE ")) answer = await moved.request("O w:1");
    expect(answer).toBe(`O w:1 ${token} x 1`);
    const releaser = await connect(1);
    expect(await releaser.request(`R w:1 ${token} h1`)).toBe("R w:1 1");
    expect(await moved.next()).toBe("O w:1 0 - 0");
  });
});
