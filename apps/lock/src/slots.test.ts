import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { LockCli } from "./cli-process.test.support.js";
import { EXIT_CODES } from "./exit-codes.js";

/**
 * lock slots against a small real HTTP server that answers GET /slots and POST /slots/moves in the
 * shapes lockd's admin server does (apps/lockd/src/slots-route.ts; the route itself is tested with
 * real clusters in apps/lockd/src/slot-move.test.ts). This checks the CLI's part: the request, the
 * wait for the commit, the output and exit statuses.
 */
interface FakeAdmin {
  readonly address: string;
  readonly posted: unknown[];
  close(): Promise<void>;
}

const servers: FakeAdmin[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

const clusters = { east: ["10.0.0.1:7420"], west: ["10.0.1.1:7420"] };
const range = (from: number, to: number, cluster: string, movingTo: string | null = null) => ({
  from,
  to,
  cluster,
  movingTo,
});
const halves = [range(0, 8191, "east"), range(8192, 16383, "west")];
const moving = [range(0, 99, "east"), range(100, 199, "east", "west"), range(200, 8191, "east"), halves[1]!];
const moved = [range(0, 99, "east"), range(100, 199, "west"), range(200, 8191, "east"), halves[1]!];

/** Answers POST with `post`, and GET /slots with each of `maps` in turn (the last one from then on). */
async function fakeAdmin(post: [number, unknown], maps: ReadonlyArray<typeof halves>): Promise<FakeAdmin> {
  const posted: unknown[] = [];
  let gets = 0;
  const server: Server = createServer((request, response) => {
    const reply = (status: number, body: unknown) =>
      response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (request.method === "POST" && request.url === "/slots/moves") {
      let body = "";
      request.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      request.on("end", () => {
        posted.push(JSON.parse(body));
        reply(...post);
      });
      return;
    }
    if (request.url !== "/slots") return reply(404, { error: "not found" });
    const ranges = maps[Math.min(gets, maps.length - 1)]!;
    // While the move drains, the source's active says how many of its keys still have holders.
    const heldKeys = maps.slice(gets).filter((map) => map === moving).length;
    gets += 1;
    reply(200, {
      cluster: "east",
      drain: ranges === moving ? { heldKeys } : null,
      map: { version: String(5 + Math.min(gets, maps.length)), clusters, ranges },
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const admin = {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    posted,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  servers.push(admin);
  return admin;
}

const begun = [202, { version: "6", from: 100, to: 199, source: "east", target: "west" }] as [
  number,
  unknown,
];

describe("lock slots", () => {
  it("prints the map: ranges with moves in progress, and each cluster's addresses", async () => {
    const admin = await fakeAdmin(begun, [moving]);
    const { code, stdout } = await LockCli.run(["slots", "--admin", admin.address]);
    expect(code).toBe(0);
    expect(stdout).toEqual([
      `slot map version 6, as ${admin.address} (cluster east) has it`,
      "",
      "SLOTS       CLUSTER  MOVING TO",
      "0-99        east     -",
      "100-199     east     west",
      "200-8191    east     -",
      "8192-16383  west     -",
      "",
      "CLUSTER  ADDRESSES",
      "east     10.0.0.1:7420",
      "west     10.0.1.1:7420",
    ]);
  });

  it("move: begins the move and waits until the map shows it committed", async () => {
    const admin = await fakeAdmin(begun, [moving, moving, moved]);
    const { code, stdout } = await LockCli.run([
      "slots",
      "move",
      "100-199",
      "--to",
      "west",
      "--admin",
      admin.address,
    ]);
    expect(code).toBe(0);
    expect(admin.posted).toEqual([{ from: 100, to: 199, target: "west" }]);
    expect(stdout[0]).toBe("moving slots 100-199 from east to west (map version 6)");
    expect(stdout.slice(1, 3)).toEqual([
      "waiting for 2 held keys there (released, or their leases run out)",
      "waiting for 1 held key there (released, or their leases run out)",
    ]);
    expect(stdout[3]).toMatch(/^committed: slots 100-199 are west's \(map version 8\) after \d/);
  });

  it("move: --no-wait returns once begun; --wait gives up with 81 while the move goes on", async () => {
    const admin = await fakeAdmin(begun, [moving]);
    const quick = await LockCli.run([
      "slots",
      "move",
      "100-199",
      "--to",
      "west",
      "--no-wait",
      "--admin",
      admin.address,
    ]);
    expect(quick.code).toBe(0);
    expect(quick.stdout).toHaveLength(1);
    const waited = await LockCli.run([
      ...["slots", "move", "100-199", "--to", "west", "--wait", "500ms", "--admin", admin.address],
    ]);
    expect(waited.code).toBe(EXIT_CODES.WAIT_TIMEOUT.status);
    expect(waited.stderr).toMatch(/--wait ran out before the move of slots 100-199 committed; it goes on/);
  });

  it("move: a move lockd refuses exits 85 with its code and reason; a bad range or no --to is a usage error", async () => {
    const admin = await fakeAdmin(
      [400, { code: "INVALID_MOVE", message: "slots 100-9000 are not all on one cluster" }],
      [halves],
    );
    const refused = await LockCli.run([
      "slots",
      "move",
      "100-9000",
      "--to",
      "west",
      "--admin",
      admin.address,
    ]);
    expect(refused.code).toBe(EXIT_CODES.REFUSED.status);
    expect(refused.stderr).toMatch(/answered 400 INVALID_MOVE: slots 100-9000 are not all on one cluster/);
    for (const args of [
      ["move", "5-"],
      ["move", "20000", "--to", "west"],
      ["move", "9-3", "--to", "west"],
      ["move", "5"],
    ]) {
      const { code } = await LockCli.run(["slots", ...args, "--admin", admin.address]);
      expect(code).toBe(EXIT_CODES.USAGE.status);
    }
    expect(admin.posted).toHaveLength(1);
  });
});
