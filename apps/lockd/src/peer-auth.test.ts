import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LineClient, LockdCluster, LockdProcess, runLockdToExit, TEST_PEER_TOKEN } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";

/** lockd's peer token: required with --peers, and a node holding another one is refused and logged. */
const running: Array<{ dispose(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of running.splice(0)) await item.dispose();
});

/** Runs lockd to its exit (one that does not start), with its own data directory. */
async function runLockd(args: string[], env: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "lockd-run-"));
  try {
    return await runLockdToExit(["--data-dir", dataDir, ...args], env);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

describe("lockd peer token", () => {
  it("refuses to start a cluster node without a peer token (exit 2), or with the auth token as peer token", async () => {
    const peers = ["--listen", "127.0.0.1:0", "--peers", "127.0.0.1:7420", "--advertise", "127.0.0.1:7420"];
    const missing = await runLockd(peers);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^lockd: --peers: refusing to run a cluster without a peer token/);
    const token = "the-same-token-for-both";
    const same = await runLockd(peers, { LOCKD_AUTH_TOKEN: token, LOCKD_PEER_TOKEN: token });
    expect(same.code).toBe(2);
    expect(same.stderr).toMatch(/the peer token must differ from the auth token/);
    expect(same.stderr).not.toContain(token);
  });

  it("starts a cluster node without one only with --insecure, and warns that anyone can join", async () => {
    const lockd = await LockdProcess.start({
      args: ["--peers", "127.0.0.1:1", "--advertise", "127.0.0.1:1", "--insecure"],
    });
    running.push(lockd);
    expect(lockd.logs.find((entry) => entry.msg === "lockd ready")?.peerAuth).toBe(false);
    expect(lockd.logs.some((entry) => entry.level === 40 && /no peer token/.test(String(entry.msg)))).toBe(
      true,
    );
  });

  it("refuses a node with another peer token: both ends log it, neither logs a token", {
    timeout: 60_000,
  }, async () => {
    const otherToken = "another-peer-token-not-the-clusters";
    const cluster = await LockdCluster.start({
      nodes: 2,
      nodeEnv: (i): Record<string, string> => (i === 1 ? { LOCKD_PEER_TOKEN: otherToken } : {}),
    });
    running.push(cluster);
    const [first, second] = cluster.nodes as [LockdProcess, LockdProcess];
    // Node 0 dials node 1: node 1 cannot check node 0's proof, so it refuses it and logs the attempt...
    const rejected = await second.waitForLog((entry) => entry.msg === "peer rejected", { since: 0 });
    expect(rejected).toMatchObject({
      node: cluster.advertised(0),
      reason: "wrong proof of the peer token",
      count: 1,
    });
    expect(String(rejected.remote)).toMatch(/^127\.0\.0\.1:\d+$/);
    // ...and node 0 logs that node 1 refused its link.
    const refused = await first.waitForLog((entry) => entry.msg === "peer refused the cluster link", {
      since: 0,
    });
    expect(refused.peer).toBe(cluster.advertised(1));
    expect(String(refused.reply)).toMatch(/^E \? - PEER_AUTH_FAILED - /);
    // The same the other way round. Rejections are reported at most once per 10 s interval (the
    // first at once, the rest in one report at its end): if another rejection came first on a
    // loaded machine (a handshake cut short), this one is in that interval's report.
    await first.waitForLog((entry) => entry.msg === "peer rejected" && entry.node === cluster.advertised(1), {
      since: 0,
      timeoutMs: 25_000,
    });
    const logs = JSON.stringify(cluster.nodes.flatMap((node) => node.logs));
    expect(logs).not.toContain(TEST_PEER_TOKEN);
    expect(logs).not.toContain(otherToken);
    // Neither follows the other: each sees no live peer.
    expect(first.logs.some((entry) => entry.msg === "following active" && entry.active !== null)).toBe(false);
    expect(second.logs.some((entry) => entry.msg === "following active" && entry.active !== null)).toBe(
      false,
    );
  });

  it("refuses a peer whose protocol version is outside its window: PEER_VERSION_UNSUPPORTED, and a log line saying so", async () => {
    const lockd = await LockdProcess.start({
      args: ["--peers", "127.0.0.1:1,127.0.0.1:2", "--advertise", "127.0.0.1:2"],
      env: { LOCKD_PEER_TOKEN: TEST_PEER_TOKEN },
    });
    running.push(lockd);
    using peer = await LineClient.connect(lockd.port);
    // Version 0 is older than any window: what a release outside the window looks like.
    const reply = await peer.request(`!N 127.0.0.1:1 ${"a".repeat(64)} 0`);
    expect(reply).toMatch(
      /^E \? - PEER_VERSION_UNSUPPORTED - the peer speaks peer protocol 0, older than this node's window \(1 to \d+\)/,
    );
    await peer.closed;
    const rejected = await lockd.waitForLog((entry) => entry.msg === "peer rejected", { since: 0 });
    expect(rejected).toMatchObject({ level: 40, node: "127.0.0.1:1" });
    expect(String(rejected.reason)).toMatch(
      /^the peer speaks peer protocol 0, older than this node's window/,
    );
  });
});
