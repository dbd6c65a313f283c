import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { LineClient, LockdProcess } from "@lock/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { LockCli } from "./cli-process.test.support.js";
import { EXIT_CODES } from "./exit-codes.js";
import type { HeldLock } from "./locks.js";

/**
 * lock locks against a small real HTTP server that answers GET /locks in the shape lockd's admin
 * server answers it (`{"locks":[…],"nextCursor":…}`, limit 1-1000, 400 with a code), and /status
 * with a role. lockd's own /locks is tested in apps/lockd; this checks the CLI's part: the query,
 * following nextCursor, the token, the output.
 */
interface FakeAdmin {
  readonly address: string;
  readonly requests: URL[];
  close(): Promise<void>;
}

const servers: FakeAdmin[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

function heldLocks(count: number, prefix = "jobs:"): HeldLock[] {
  return Array.from({ length: count }, (_, i) => ({
    key: `${prefix}${String(i).padStart(5, "0")}`,
    token: String(1000n + BigInt(i)),
    leaseRemainingMs: 1_500 + i,
    waiters: i % 3,
    holder: i % 2 === 0 ? `10.0.0.${i % 250}:5${i % 1000}` : null,
  }));
}

async function fakeAdmin(
  locks: readonly HeldLock[],
  options: { role?: string; token?: string; answer?: (url: URL) => [number, unknown] | undefined } = {},
): Promise<FakeAdmin> {
  const requests: URL[] = [];
  const server: Server = createServer((request: IncomingMessage, response) => {
    const url = new URL(request.url!, "http://fake");
    requests.push(url);
    const reply = (status: number, body: unknown) => {
      response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    };
    if (options.token !== undefined && request.headers.authorization !== `Bearer ${options.token}`) {
      return reply(401, { error: "unauthorized" });
    }
    const special = options.answer?.(url);
    if (special) return reply(...special);
    if (url.pathname === "/status") return reply(200, { role: options.role ?? "active" });
    if (url.pathname !== "/locks") return reply(404, { error: "not found" });
    const limit = Number(url.searchParams.get("limit") ?? "100");
    if (!(limit >= 1 && limit <= 1000))
      return reply(400, { code: "BAD_LIMIT", message: "limit must be 1-1000" });
    const prefix = url.searchParams.get("prefix") ?? "";
    const after = url.searchParams.get("cursor");
    const matching = locks.filter(
      (lock) => lock.key.startsWith(prefix) && (after === null || lock.key > after),
    );
    const page = matching.slice(0, limit);
    reply(200, { locks: page, nextCursor: matching.length > limit ? page.at(-1)!.key : null });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const admin = {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  servers.push(admin);
  return admin;
}

describe("lock locks", () => {
  it("prints held keys with token, lease left, waiters and holder", async () => {
    const admin = await fakeAdmin(heldLocks(3));
    const { code, stdout } = await LockCli.run(["locks", "--admin", admin.address]);
    expect(code).toBe(0);
    expect(stdout).toEqual([
      "KEY         MODE       TOKEN  LEASE LEFT  WAITERS  HOLDER",
      "jobs:00000  exclusive  1000   1.5s        0        10.0.0.0:50",
      "jobs:00001  exclusive  1001   1.5s        1        -",
      "jobs:00002  exclusive  1002   1.5s        2        10.0.0.2:52",
    ]);
    expect(admin.requests.map((url) => url.search)).toEqual(["?limit=100"]);
  });

  it("prints a row per holder of a real lockd's shared keys and semaphores, with mode and slot", async () => {
    await using lockd = await LockdProcess.start({ admin: true });
    using client = await LineClient.connect(lockd.port);
    const r1 = (await client.request("Q rw s 30 0 r1")).split(" ")[2];
    const r2 = (await client.request("Q rw s 30 0 r2")).split(" ")[2];
    const p0 = (await client.request("Q sem p3 30 0 p1")).split(" ")[2];
    const x = (await client.request("A x 30 0")).split(" ")[2];
    const { code, stdout } = await LockCli.run(["locks", "--admin", `127.0.0.1:${lockd.adminPort}`]);
    expect(code).toBe(0);
    const rows = stdout.map((line) => line.split(/ {2,}/).slice(0, 3));
    expect(rows).toEqual([
      ["KEY", "MODE", "TOKEN"],
      ["rw", "shared", r1],
      ["rw", "shared", r2],
      ["sem", "permit 0/3", p0],
      ["x", "exclusive", x],
    ]);
  });

  it("follows nextCursor until --limit rows are shown, a page of at most 1000 at a time", async () => {
    const all = heldLocks(2_500);
    const admin = await fakeAdmin(all);
    const { code, stdout } = await LockCli.run([
      "locks",
      "--admin",
      admin.address,
      "--limit",
      "2100",
      "--json",
    ]);
    expect(code).toBe(0);
    const listed = JSON.parse(stdout.join("\n")) as { locks: HeldLock[]; nextCursor: string | null };
    expect(listed.locks).toEqual(all.slice(0, 2_100));
    expect(listed.nextCursor).toBe(all[2_099]!.key);
    expect(
      admin.requests.map((url) => [url.searchParams.get("limit"), url.searchParams.get("cursor")]),
    ).toEqual([
      ["1000", null],
      ["1000", all[999]!.key],
      ["100", all[1_999]!.key],
    ]);
  });

  it("stops at the end of the list, and says when more keys are held than shown", async () => {
    const admin = await fakeAdmin(heldLocks(5));
    const everything = await LockCli.run(["locks", "--admin", admin.address, "--limit", "10"]);
    expect(everything.stdout).toHaveLength(6);
    const some = await LockCli.run(["locks", "--admin", admin.address, "--limit", "2"]);
    expect(some.stdout).toHaveLength(4);
    expect(some.stdout.at(-1)).toMatch(/more keys held/);
  });

  it("passes --prefix on", async () => {
    const admin = await fakeAdmin([...heldLocks(3, "jobs:"), ...heldLocks(2, "orders:")]);
    const { stdout } = await LockCli.run([
      "locks",
      "--admin",
      admin.address,
      "--prefix",
      "orders:",
      "--json",
    ]);
    expect((JSON.parse(stdout.join("\n")) as { locks: HeldLock[] }).locks.map((lock) => lock.key)).toEqual([
      "orders:00000",
      "orders:00001",
    ]);
    expect(admin.requests[0]!.searchParams.get("prefix")).toBe("orders:");
  });

  it("asks the active when given several admin addresses", async () => {
    const standby = await fakeAdmin([], {
      role: "standby",
      answer: (url) => (url.pathname === "/locks" ? [500, {}] : undefined),
    });
    const active = await fakeAdmin(heldLocks(1));
    const { code } = await LockCli.run(["locks", "--admin", `${standby.address},${active.address}`]);
    expect(code).toBe(0);
    expect(active.requests.some((url) => url.pathname === "/locks")).toBe(true);
    expect(standby.requests.some((url) => url.pathname === "/locks")).toBe(false);
  });

  it("sends the admin token; 84 when refused, 85 for a 400 (with its code), 83 when unreachable", async () => {
    const token = "locks-test-admin-token-0123456789";
    const secured = await fakeAdmin(heldLocks(1), { token });
    expect((await LockCli.run(["locks", "--admin", secured.address], { LOCK_ADMIN_TOKEN: token })).code).toBe(
      0,
    );
    const refused = await LockCli.run(["locks", "--admin", secured.address]);
    expect(refused.code).toBe(EXIT_CODES.AUTH_FAILED.status);
    expect(refused.stderr).toMatch(/refused the admin token/);

    const badCursor = await fakeAdmin([], {
      answer: (url) =>
        url.pathname === "/locks"
          ? [400, { code: "BAD_CURSOR", message: "cursor is not one of ours" }]
          : undefined,
    });
    const bad = await LockCli.run(["locks", "--admin", badCursor.address]);
    expect(bad.code).toBe(EXIT_CODES.REFUSED.status);
    expect(bad.stderr).toMatch(/answered 400 BAD_CURSOR: cursor is not one of ours/);

    const gone = await LockCli.run(["locks", "--admin", "127.0.0.1:1"]);
    expect(gone.code).toBe(EXIT_CODES.NO_SERVER.status);
  });

  it("says so when --admin names lockd's client port, which does not speak HTTP (85)", async () => {
    await using lockd = await LockdProcess.start();
    const { code, stderr } = await LockCli.run(["locks", "--admin", lockd.address]);
    expect(code).toBe(EXIT_CODES.REFUSED.status);
    // The parser's code on Node 22; Node 24 and later give the error no code.
    expect(stderr).toContain(`lock: ${lockd.address} does not answer HTTP (`);
    expect(stderr).toMatch(
      /\((HPE_INVALID_CONSTANT|HTTPParserError)\): this looks like lockd's client port \(--listen\), not its admin port \(--admin\)/,
    );
  });
});
