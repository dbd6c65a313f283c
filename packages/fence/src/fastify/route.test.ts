/**
 * Fenced routes end to end over a real socket, with the route's write going to Postgres through
 * request.fenced(): the Kleppmann scenario at the HTTP edge, including the pause the preHandler alone
 * cannot catch (holder 1 passes the check, stalls inside the handler, and writes after holder 2).
 */
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runKleppmannScenario, simulatedGrants, type WriteOutcome } from "../contract/kleppmann.js";
import { fence } from "../fence.js";
import { createFenceTable, type PostgresFenceTx, PostgresStore } from "../postgres/index.js";
import type { FenceStore } from "../store.js";
import { type PgSandbox, pgSandbox, selectTokens, uniqueName } from "../testing/sandbox.js";
import { fencingHeaders } from "./index.js";
import fencePlugin from "./plugin.js";
import type { FenceRouteConfig } from "./types.js";

describe("fenced route writing to Postgres", () => {
  let sandbox: PgSandbox;
  let store: PostgresStore;
  let log: string;
  /** Requests whose token is a key here wait inside the handler until the promise resolves. */
  const pauses = new Map<string, Promise<void>>();
  const started = new Map<string, () => void>();

  async function serve(store: FenceStore<unknown>, fenceConfig: Partial<FenceRouteConfig> = {}) {
    const app = Fastify();
    await app.register(fencePlugin, { store });
    app.post<{ Params: { id: string } }>(
      "/accounts/:id/entries",
      {
        config: {
          fence: {
            resource: (request) => `accounts:${request.params.id}`,
            ...fenceConfig,
          },
        },
      },
      async (request) => {
        const token = String(request.fencingToken);
        started.get(token)?.();
        await pauses.get(token);
        await request.fenced((tx: PostgresFenceTx) =>
          tx.query(`INSERT INTO ${log} (resource, token) VALUES ($1, $2)`, [request.fenceResource, token]),
        );
        return { applied: token };
      },
    );
    const address = await app.listen({ port: 0, host: "127.0.0.1" });
    return { app, address };
  }

  let app: FastifyInstance;
  let address: string;
  const post = (account: string, token: bigint) =>
    fetch(`${address}/accounts/${account}/entries`, { method: "POST", headers: fencingHeaders({ token }) });
  const outcome = async (response: Response): Promise<WriteOutcome> => {
    if (response.status === 200) return "accepted";
    if (response.status === 409) return "refused";
    throw new Error(`unexpected ${response.status}: ${await response.text()}`);
  };
  const applied = (account: string) =>
    selectTokens(sandbox.pool, `SELECT token::text AS token FROM ${log} WHERE resource = $1 ORDER BY seq`, [
      `accounts:${account}`,
    ]);

  beforeAll(async () => {
    sandbox = await pgSandbox(4);
    await createFenceTable(sandbox.pool, sandbox.table("fence"));
    log = sandbox.table("entries");
    await sandbox.pool.query(`CREATE TABLE ${log} (seq bigserial, resource text, token numeric(20, 0))`);
    store = new PostgresStore({ pool: sandbox.pool, table: sandbox.table("fence") });
    ({ app, address } = await serve(store));
  });
  afterAll(async () => {
    await app?.close();
    await sandbox?.close();
  });

  it("refuses client 1's late request after client 2's (Kleppmann)", async () => {
    const account = uniqueName("acct");
    await runKleppmannScenario({
      getToken: simulatedGrants(2n ** 53n),
      write: async (token) => outcome(await post(account, token)),
      applied: () => applied(account),
    });
  });

  it("refuses a holder that passed the check, paused in the handler, and wrote after a newer holder", async () => {
    const account = uniqueName("acct");
    const [token1, token2] = [2n ** 63n - 1n, 2n ** 63n];
    let resume!: () => void;
    pauses.set(String(token1), new Promise((resolve) => (resume = resolve)));
    const inHandler = new Promise<void>((resolve) => started.set(String(token1), resolve));

    const late = post(account, token1);
    await inHandler; // holder 1 passed the preHandler check and is now "paused"
    expect(await outcome(await post(account, token2))).toBe("accepted");
    resume();
    const response = await late;
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ code: "FENCE_STALE_TOKEN" });
    expect(await applied(account)).toEqual([token2]);
  });

  it("with precheck: false, touches the store once per request, in the handler's transaction", async () => {
    let calls = 0;
    const counting: FenceStore<unknown> = {
      fence: (resource, token, write) => {
        calls++;
        return store.fence(resource, token, write as never);
      },
      current: (resource) => store.current(resource),
    };
    const server = await serve(counting, { precheck: false });
    try {
      const account = uniqueName("acct");
      const send = (token: bigint) =>
        fetch(`${server.address}/accounts/${account}/entries`, {
          method: "POST",
          headers: fencingHeaders({ token }),
        });
      expect((await send(5n)).status).toBe(200);
      expect((await send(4n)).status).toBe(409);
      expect(calls).toBe(2);
      expect(await applied(account)).toEqual([5n]);
      expect(await fence(store, `accounts:${account}`, 5n, () => "equal is fine")).toBe("equal is fine");
    } finally {
      await server.app.close();
    }
  });
});
