import { LineClient, LockdCluster, type LockdProcess } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";

/**
 * Proof of ownership survives a failover: the holder's request id is replicated with the grant, so
 * the holder can release on the new active, and a guessed token cannot.
 */
const clusters: LockdCluster[] = [];
const clients: LineClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const cluster of clusters.splice(0)) await cluster.dispose();
});

async function connect(port: number): Promise<LineClient> {
  const client = await LineClient.connect(port);
  clients.push(client);
  return client;
}

const tokenOf = (line: string) => BigInt(line.split(" ")[2]!);

describe("release ownership across a failover", () => {
  it("the new active lets the holder release with its request id and refuses a guessed token", async () => {
    const cluster = await LockdCluster.start({ nodes: 2 });
    clusters.push(cluster);
    const [a, b] = cluster.nodes as [LockdProcess, LockdProcess];
    await a.waitForServing({ since: 0 });
    await b.waitForFollowing(cluster.advertised(0), { since: 0 });
    const holder = await connect(a.port);
    const token = tokenOf(await holder.request("A payments:7 30 0 k1.1.5e0d1c2b3a4f5e6d"));
    // Replicated before the active dies: the standby has the holder and its id.
    const standby = await connect(b.port);
    await expect.poll(async () => (await standby.request("I")).includes(" keys=1 ")).toBe(true);
    const since = b.logs.length;
    await a.kill("SIGKILL");
    await b.waitForServing({ since });
    const attacker = await connect(b.port);
    expect(await attacker.request(`R payments:7 ${token}`)).toMatch(/^E R payments:7 NOT_OWNER /);
    expect(await attacker.request(`X payments:7 ${token} 1 k1.1.0000000000000000`)).toMatch(
      /^E X payments:7 NOT_OWNER /,
    );
    const back = await connect(b.port);
    expect(await back.request(`R payments:7 ${token} k1.1.5e0d1c2b3a4f5e6d`)).toBe("R payments:7 1");
  });
});
