/**
 * Fenced routes for readers and permits, over real sockets, against each store on its real server: a
 * read route records its readers, so a stalled writer's request is refused (409 FENCE_NEWER_READ); a
 * stalled reader's is refused after a newer write (409 FENCE_STALE_READ); permits write to their own
 * slots' routes side by side, and a permit's headers on the whole key's route are refused (400).
 */
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReadContractFixture } from "../contract/read-contract.js";
import type { FencingLock } from "../grant.js";
import { MemoryStore } from "../memory.js";
import { slotResource } from "../slot.js";
import { memoryFixture, postgresFixture, redisFixture } from "../testing/fixtures.js";
import { uniqueName } from "../testing/sandbox.js";
import { fencingHeaders } from "./index.js";
import fencePlugin from "./plugin.js";

type Params = { Params: { id: string; slot?: string } };

async function serve<Tx, ReadTx>(fixture: ReadContractFixture<Tx, ReadTx>): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(fencePlugin, { store: fixture.store });
  const writeRoute = (url: string, resource: (params: Record<string, unknown>) => string) =>
    app.put<Params>(
      url,
      { config: { fence: { resource: (request) => resource(request.params) } } },
      async (request) => {
        await request.fenced((tx: Tx) =>
          fixture.appendLog(tx, request.fenceResource!, request.fencingToken!),
        );
        return { wrote: String(request.fencingToken) };
      },
    );
  writeRoute("/docs/:id", (params) => `doc:${params.id}`);
  writeRoute("/tenants/:id", (params) => `tenant:${params.id}`);
  writeRoute("/tenants/:id/slots/:slot", (params) =>
    slotResource(`tenant:${params.id}`, Number(params.slot)),
  );
  app.get<Params>(
    "/docs/:id",
    { config: { fence: { resource: (request) => `doc:${request.params.id}`, read: true, record: true } } },
    async (request) => {
      const log = await request.fenced((tx: ReadTx) => fixture.readLogIn(tx, request.fenceResource!));
      return { log: log.map(String) };
    },
  );
  await app.listen({ port: 0, host: "127.0.0.1" });
  return app;
}

function describeModes<Tx, ReadTx>(name: string, setup: () => Promise<ReadContractFixture<Tx, ReadTx>>) {
  describe(`fenced routes for readers and permits, ${name} store`, () => {
    let fixture: ReadContractFixture<Tx, ReadTx>;
    let app: FastifyInstance;
    let base: string;
    beforeAll(async () => {
      fixture = await setup();
      app = await serve(fixture);
      const address = app.server.address();
      base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    });
    afterAll(async () => {
      await app?.close();
      await fixture?.close();
    });

    const send = async (method: "GET" | "PUT", path: string, lock: FencingLock) => {
      const response = await fetch(`${base}${path}`, { method, headers: fencingHeaders(lock) });
      return { status: response.status, body: await response.json() };
    };

    it("refuses a stalled writer after a newer reader read (409 FENCE_NEWER_READ)", async () => {
      const id = uniqueName("doc");
      expect(await send("PUT", `/docs/${id}`, { token: 10n })).toMatchObject({ status: 200 });
      // Writer 11 stalls; reader 12 (a shared grant) reads through the recording route.
      expect(await send("GET", `/docs/${id}`, { token: 12n, mode: "shared" })).toEqual({
        status: 200,
        body: { log: ["10"] },
      });
      const late = await send("PUT", `/docs/${id}`, { token: 11n, mode: "exclusive" });
      expect(late).toMatchObject({ status: 409, body: { code: "FENCE_NEWER_READ" } });
      expect(await fixture.readLog(`doc:${id}`)).toEqual([10n]);
    });

    it("refuses a stalled reader after a newer write (409 FENCE_STALE_READ)", async () => {
      const id = uniqueName("doc");
      expect(await send("PUT", `/docs/${id}`, { token: 21n })).toMatchObject({ status: 200 });
      const late = await send("GET", `/docs/${id}`, { token: 20n, mode: "shared" });
      expect(late).toMatchObject({ status: 409, body: { code: "FENCE_STALE_READ" } });
    });

    it("refuses a reader's headers on a route that writes (400 FENCE_SHARED_WRITE)", async () => {
      const refused = await send("PUT", `/docs/${uniqueName("doc")}`, { token: 30n, mode: "shared" });
      expect(refused).toMatchObject({ status: 400, body: { code: "FENCE_SHARED_WRITE" } });
    });

    it("accepts two live permits on their own slots, refuses a permit on the whole key or another slot", async () => {
      const tenant = uniqueName("t");
      const first = { token: 40n, key: `tenant:${tenant}`, slot: 0 };
      const second = { token: 41n, key: `tenant:${tenant}`, slot: 1 };
      // The later permit writes first; the earlier one is live too, and its own slot accepts it.
      expect(await send("PUT", `/tenants/${tenant}/slots/1`, second)).toMatchObject({ status: 200 });
      expect(await send("PUT", `/tenants/${tenant}/slots/0`, first)).toMatchObject({ status: 200 });
      for (const path of [`/tenants/${tenant}`, `/tenants/${tenant}/slots/1`]) {
        expect(await send("PUT", path, first), path).toMatchObject({
          status: 400,
          body: { code: "FENCE_SLOT_MISMATCH" },
        });
      }
      expect(await fixture.readLog(slotResource(first))).toEqual([40n]);
      expect(await fixture.readLog(slotResource(second))).toEqual([41n]);
      expect(await fixture.readLog(`tenant:${tenant}`)).toEqual([]);
    });
  });
}

describeModes("memory", memoryFixture);
describeModes("Postgres", postgresFixture);
describeModes("Redis", redisFixture);

describe("fenced route options for reads", () => {
  it("refuses malformed Fencing-Slot and Fencing-Mode headers (400 FENCE_BAD_TOKEN)", async () => {
    const app = Fastify();
    await app.register(fencePlugin, { store: new MemoryStore() });
    app.put("/doc", { config: { fence: { resource: "doc" } } }, async () => "ok");
    for (const headers of [
      { "fencing-token": "1", "fencing-slot": "x" },
      { "fencing-token": "1", "fencing-slot": "01" },
      { "fencing-token": "1", "fencing-mode": "read" },
    ]) {
      const response = await app.inject({ method: "PUT", url: "/doc", headers });
      expect(response.statusCode, JSON.stringify(headers)).toBe(400);
      expect(response.json()).toMatchObject({ code: "FENCE_BAD_TOKEN" });
    }
    await app.close();
  });

  it("refuses record without read, and read on a store without the read rule (FENCE_BAD_OPTIONS)", async () => {
    const app = Fastify();
    await app.register(fencePlugin, { store: new MemoryStore() });
    expect(() =>
      app.get("/a", { config: { fence: { resource: "a", record: true } } }, async () => ""),
    ).toThrow(expect.objectContaining({ code: "FENCE_BAD_OPTIONS" }));
    await app.close();
    const writesOnly = Fastify();
    const memory = new MemoryStore();
    await writesOnly.register(fencePlugin, {
      store: { fence: memory.fence.bind(memory), current: memory.current.bind(memory) },
    });
    expect(() =>
      writesOnly.get("/b", { config: { fence: { resource: "b", read: true } } }, async () => ""),
    ).toThrow(expect.objectContaining({ code: "FENCE_BAD_OPTIONS" }));
    await writesOnly.close();
  });
});
