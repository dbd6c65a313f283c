import { LineClient, LockdProcess } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { LocksPage } from "./locks-route.js";

/**
 * A client's address in /locks (and so `lock locks`) and in lockd's log lines is `host:port`, with
 * an IPv6 host in brackets as everywhere else (`--listen`, `--peers`): `[::1]:41000`, not
 * `::1:41000`, which no one can split into host and port. Real lockd on the IPv6 loopback.
 */
const disposables: Array<{ dispose(): Promise<void> | void }> = [];
afterEach(async () => {
  for (const item of disposables.splice(0)) await item.dispose();
});

async function lockdOnIpv6(env: Record<string, string> = {}): Promise<LockdProcess> {
  // The later --listen wins over the testkit's 127.0.0.1 one.
  const lockd = await LockdProcess.start({ admin: true, args: ["--listen", "[::1]:0"], env });
  disposables.push(lockd);
  return lockd;
}

async function connect(lockd: LockdProcess): Promise<LineClient> {
  const client = await LineClient.connect(lockd.port, "::1");
  disposables.push({ dispose: () => client.close() });
  return client;
}

describe("an IPv6 client's address", () => {
  it("is bracketed as a key's holder in /locks", async () => {
    const lockd = await lockdOnIpv6();
    const client = await connect(lockd);
    expect(await client.request("A ipv6:key 60 0")).toMatch(/^A ipv6:key \d+$/);
    const response = await fetch(`http://127.0.0.1:${lockd.adminPort}/locks`);
    const page = (await response.json()) as LocksPage;
    expect(page.locks.map((lock) => lock.holder)).toEqual([`[::1]:${client.socket.localPort}`]);
  });

  it("is bracketed in the log line of a failed authentication", async () => {
    const lockd = await lockdOnIpv6({ LOCKD_AUTH_TOKEN: "a-token-of-24-characters" });
    const client = await connect(lockd);
    const since = lockd.logs.length;
    expect(await client.request("H wrong-token-of-24-chars")).toMatch(/AUTH_FAILED/);
    const entry = await lockd.waitForLog((log) => log.msg === "authentication failed", { since });
    expect(entry.remote).toBe(`[::1]:${client.socket.localPort}`);
  });
});
