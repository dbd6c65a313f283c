import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LockdCluster } from "@lock/testkit";
import { it } from "vitest";
import { eventually, finishInTurn, JOB, LockCli } from "./cli-process.test.support.js";

async function extensionsServed(cluster: LockdCluster, i: number): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${cluster.nodes[i]!.adminPort}/status`);
  const status = (await response.json()) as { counters: { extensions: number } };
  return status.counters.extensions;
}

it("kill -9 of the active while lock run's command runs: the command goes on, and the key goes to no one else", async () => {
  await using cluster = await LockdCluster.start({ nodes: 3, args: ["--admin", "127.0.0.1:0"] });
  await cluster.nodes[0]!.waitForServing({ since: 0 });
  await Promise.all(
    cluster.nodes.slice(1).map((node) => node.waitForFollowing(cluster.advertised(0), { since: 0 })),
  );
  const dir = mkdtempSync(join(tmpdir(), "lock-run-cluster-"));
  try {
    const log = join(dir, "job.log");
    const env = { LOCK_SERVERS: cluster.nodes.map((node) => node.address).join(",") };
    // A 6 s lease is renewed every 2 s, leaving 4 s for the renewal to find the new active.
    const run = (name: string) =>
      LockCli.start(["run", "nightly", "--lease", "6s", "--", "node", "-e", JOB, log, name], env);
    using first = run("first");
    await first.line((line) => line.startsWith("started first"));
    // The grant has reached the standbys (replication is asynchronous), and a second runner waits.
    await eventually(
      async () => (await cluster.info(1)).keys === "1" && (await cluster.info(2)).keys === "1",
    );
    using second = run("second");
    await eventually(async () => (await cluster.info(0)).waiters === "1");

    const since = cluster.nodes[1]!.logs.length;
    await cluster.nodes[0]!.kill("SIGKILL");
    await cluster.nodes[1]!.waitForServing({ since });
    // The first runner's lease is renewed by the new active: it still holds the key there.
    const before = await extensionsServed(cluster, 1);
    await eventually(async () => (await extensionsServed(cluster, 1)) > before);

    await finishInTurn(first, second, log);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
