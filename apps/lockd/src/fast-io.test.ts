import { LineClient, LockdCluster, LockdProcess } from "@lock/testkit";
import { describe, expect, it } from "vitest";

/** What some CI setups run every Node process with: a deprecated API used anywhere is fatal. */
const STRICT = { NODE_OPTIONS: "--pending-deprecation --throw-deprecation" };

/** Takes and releases `count` keys on `port`, each grant checked. */
async function takeAndRelease(port: number, prefix: string, count: number): Promise<void> {
  using client = await LineClient.connect(port);
  for (let i = 0; i < count; i++) {
    const granted = await client.request(`A ${prefix}:${i} 30 0`);
    expect(granted).toMatch(new RegExp(`^A ${prefix}:${i} \\d+$`));
    expect(await client.request(`R ${prefix}:${i} ${granted.split(" ")[2]}`)).toBe(`R ${prefix}:${i} 1`);
  }
}

describe("lockd's socket I/O mode (--fast-io)", () => {
  it("runs clean under --pending-deprecation --throw-deprecation by default: serves, replicates, fails over, stops", async () => {
    await using cluster = await LockdCluster.start({ nodes: 2, env: STRICT });
    const [first, second] = cluster.nodes as [LockdProcess, LockdProcess];
    expect(first.logs.find((entry) => entry.msg === "lockd ready")).toMatchObject({ fastIo: "off" });
    // Since start: both may have happened before these lines run.
    await first.waitForServing({ since: 0 });
    await second.waitForFollowing(cluster.advertised(0), { since: 0 });
    // Client connections, both ends of both peer links, the replication stream and its acks.
    await takeAndRelease(first.port, "strict", 50);
    using holder = await cluster.connect(0);
    expect(await holder.request("A strict:held 30 0")).toMatch(/^A strict:held \d+$/);

    const since = second.logs.length;
    expect(await first.stop()).toEqual({ code: 0, signal: null });
    await second.waitForServing({ since });
    await takeAndRelease(second.port, "strict-after", 5);
    expect(await second.stop()).toEqual({ code: 0, signal: null });
    // A deprecation would have killed the process; this also catches one that only warned.
    expect(first.stderr.join("") + second.stderr.join("")).toBe("");
  });

  it("--fast-io serves through the fast paths and says so in its ready line", async () => {
    await using lockd = await LockdProcess.start({ args: ["--fast-io"] });
    expect(lockd.logs.find((entry) => entry.msg === "lockd ready")).toMatchObject({
      fastIo: "reads and writes",
    });
    await takeAndRelease(lockd.port, "fast", 20);
  });

  it("refuses --fast-io (or LOCKD_FAST_IO) under --throw-deprecation before it binds, naming the flag", async () => {
    await expect(LockdProcess.start({ args: ["--fast-io"], env: STRICT })).rejects.toThrow(
      /code 2, .*lockd: --fast-io: uses process\.binding \(DEP0111\), which --throw-deprecation makes fatal/,
    );
    await expect(LockdProcess.start({ env: { ...STRICT, LOCKD_FAST_IO: "1" } })).rejects.toThrow(
      /code 2, .*lockd: LOCKD_FAST_IO \(--fast-io\): uses process\.binding/,
    );
  });
});
