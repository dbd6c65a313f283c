/**
 * Kleppmann's scenario end to end with a real lockd process: client 1 acquires with a short lease and
 * "pauses" (holds the lock and does nothing), lockd reclaims the expired lease and hands the key to
 * client 2, which was waiting, with a newer token; client 2 writes; client 1 wakes and writes with its
 * old token. Each resource (a Postgres row, a Redis key, a fenced Fastify route) must refuse client 1
 * and keep client 2's write.
 */
import { LineClient, LockdProcess } from "@lock/testkit";
import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fencedAppend } from "./contract/contract.js";
import { type KleppmannParticipants, runKleppmannScenario, type WriteOutcome } from "./contract/kleppmann.js";
import fencePlugin from "./fastify/plugin.js";
import { fencingHeaders } from "./headers.js";
import { postgresFixture, redisFixture } from "./testing/fixtures.js";
import { uniqueName } from "./testing/sandbox.js";

let lockd: LockdProcess;
const clients: LineClient[] = [];

beforeAll(async () => {
  lockd = await LockdProcess.start();
});
afterAll(async () => {
  for (const client of clients) client.close();
  await lockd?.dispose();
});

/**
 * Grants from lockd for one key: the first holder gets a 300 ms lease and never releases it (it is
 * the paused client); the next acquire waits in lockd's queue until that lease expires.
 */
function lockdGrants(key: string): () => Promise<bigint> {
  let holder = 0;
  return async () => {
    const client = await LineClient.connect(lockd.port);
    clients.push(client);
    holder += 1;
    const lease = holder === 1 ? "0.3" : "30";
    const reply = await client.request(`A ${key} ${lease} 0 holder-${holder}`);
    const [kind, , token] = reply.split(" ");
    if (kind !== "A" || token === undefined) throw new Error(`lockd refused the acquire: ${reply}`);
    return BigInt(token);
  };
}

describe("Kleppmann's scenario with a real lockd", () => {
  for (const [name, setup] of [
    ["Postgres", postgresFixture],
    ["Redis", redisFixture],
  ] as const) {
    it(`${name} refuses the paused holder's late write and keeps the newer holder's`, async () => {
      const fixture = await setup();
      try {
        const resource = uniqueName("kleppmann");
        const participants: KleppmannParticipants = {
          getToken: lockdGrants(`${name}:${resource}`),
          write: (token) => fencedAppend(fixture as never, fixture.store as never, resource, token),
          applied: () => fixture.readLog(resource),
        };
        await runKleppmannScenario(participants);
      } finally {
        await fixture.close();
      }
    });
  }

  it("a fenced Fastify route refuses the paused holder's late request", async () => {
    const fixture = await postgresFixture();
    const app = Fastify();
    try {
      await app.register(fencePlugin, { store: fixture.store });
      app.post<{ Params: { id: string } }>(
        "/orders/:id",
        { config: { fence: { resource: (request) => `orders:${request.params.id}` } } },
        async (request) => {
          await request.fenced((tx) =>
            fixture.appendLog(tx as never, request.fenceResource!, request.fencingToken!),
          );
          return { ok: true };
        },
      );
      const address = await app.listen({ port: 0, host: "127.0.0.1" });
      const order = uniqueName("order");
      const write = async (token: bigint): Promise<WriteOutcome> => {
        const response = await fetch(`${address}/orders/${order}`, {
          method: "POST",
          headers: fencingHeaders({ token }),
        });
        if (response.status === 200) return "accepted";
        expect(response.status).toBe(409);
        expect(await response.json()).toMatchObject({ code: "FENCE_STALE_TOKEN" });
        return "refused";
      };
      await runKleppmannScenario({
        getToken: lockdGrants(`route:${order}`),
        write,
        applied: () => fixture.readLog(`orders:${order}`),
      });
    } finally {
      await app.close();
      await fixture.close();
    }
  });
});
