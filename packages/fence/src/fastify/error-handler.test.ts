/**
 * Every refusal of a fenced route is a Fastify error like any other: it reaches the app's
 * setErrorHandler, whether the preHandler or request.fenced() refused it, and without a handler of its
 * own the app answers Fastify's usual body. Against each store, on its real server.
 */
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContractFixture } from "../contract/contract.js";
import { FenceError, StaleTokenError } from "../errors.js";
import { memoryFixture, postgresFixture, redisFixture } from "../testing/fixtures.js";
import { uniqueName } from "../testing/sandbox.js";
import fencePlugin, { fenceErrorBody } from "./plugin.js";

/** Two fenced routes appending the token to the resource's log: one prechecked, one not. */
async function appOn<Tx>(fixture: ContractFixture<Tx>, app: FastifyInstance): Promise<FastifyInstance> {
  await app.register(fencePlugin, { store: fixture.store });
  for (const precheck of [true, false]) {
    app.put<{ Params: { id: string } }>(
      `/${precheck ? "checked" : "unchecked"}/:id`,
      { config: { fence: { resource: (request) => `${request.params.id}`, precheck } } },
      async (request) => {
        const { fenceResource, fencingToken } = request;
        await request.fenced((tx: Tx) => fixture.appendLog(tx, fenceResource!, fencingToken!));
        return { applied: String(fencingToken) };
      },
    );
  }
  return app;
}

function describeErrorFlow<Tx>(name: string, setup: () => Promise<ContractFixture<Tx>>): void {
  describe(`fenced routes on the ${name} store`, () => {
    let fixture: ContractFixture<Tx>;
    let custom: FastifyInstance;
    let plain: FastifyInstance;
    const handled: unknown[] = [];
    const logLines: string[] = [];

    beforeAll(async () => {
      fixture = await setup();
      const app = Fastify();
      app.setErrorHandler((error, _request, reply) => {
        handled.push(error);
        if (error instanceof FenceError)
          return reply.code(error.statusCode).send({ handled: true, ...fenceErrorBody(error) });
        return reply.send(error);
      });
      custom = await appOn(fixture, app);
      const stream = { write: (line: string) => void logLines.push(line) };
      plain = await appOn(fixture, Fastify({ logger: { level: "info", stream } }));
    });
    afterAll(async () => {
      await custom?.close();
      await plain?.close();
      await fixture?.close();
    });

    const put = (app: FastifyInstance, path: string, headers: Record<string, string> = {}) =>
      app.inject({ method: "PUT", url: path, headers });

    for (const route of ["checked", "unchecked"]) {
      it(`${route}: a stale token reaches the app's error handler as a StaleTokenError`, async () => {
        const resource = uniqueName("stale");
        expect((await put(custom, `/${route}/${resource}`, { "fencing-token": "10" })).statusCode).toBe(200);
        handled.length = 0;
        const response = await put(custom, `/${route}/${resource}`, { "fencing-token": "9" });
        expect(handled).toHaveLength(1);
        expect(handled[0]).toBeInstanceOf(StaleTokenError);
        expect(handled[0]).toMatchObject({
          statusCode: 409,
          resource,
          presentedToken: 9n,
          currentToken: 10n,
        });
        expect(response.statusCode).toBe(409);
        expect(response.json()).toEqual({
          handled: true,
          statusCode: 409,
          code: "FENCE_STALE_TOKEN",
          error: "Conflict",
          message: `stale fencing token for "${resource}": presented 9, the resource already accepted 10`,
          resource,
          presentedToken: "9",
          currentToken: "10",
        });
        expect(await fixture.readLog(resource)).toEqual([10n]);
      });

      it(`${route}: a missing or malformed token reaches the app's error handler`, async () => {
        for (const [headers, code] of [
          [{}, "FENCE_MISSING_TOKEN"],
          [{ "fencing-token": "007" }, "FENCE_BAD_TOKEN"],
        ] as const) {
          handled.length = 0;
          const response = await put(custom, `/${route}/${uniqueName("bad")}`, headers);
          expect(handled).toEqual([expect.objectContaining({ name: "FenceError", code, statusCode: 400 })]);
          expect(response.statusCode).toBe(400);
          expect(response.json()).toMatchObject({ handled: true, code, error: "Bad Request" });
        }
      });

      it(`${route}: without an error handler of its own, the app answers Fastify's usual error body`, async () => {
        const resource = uniqueName("plain");
        expect((await put(plain, `/${route}/${resource}`, { "fencing-token": "10" })).statusCode).toBe(200);
        const stale = await put(plain, `/${route}/${resource}`, { "fencing-token": "9" });
        expect(stale.statusCode).toBe(409);
        expect(stale.json()).toEqual({
          statusCode: 409,
          code: "FENCE_STALE_TOKEN",
          error: "Conflict",
          message: `stale fencing token for "${resource}": presented 9, the resource already accepted 10`,
        });
        const missing = await put(plain, `/${route}/${resource}`);
        expect(missing.statusCode).toBe(400);
        expect(missing.json()).toEqual({
          statusCode: 400,
          code: "FENCE_MISSING_TOKEN",
          error: "Bad Request",
          message: "the fencing-token header is required",
        });
        expect(await fixture.readLog(resource)).toEqual([10n]);
        // Fastify logs a 4xx at info level, like any client error; the bigints on the error serialise.
        const refusal = logLines
          .map((line) => JSON.parse(line))
          .find((entry) => entry.err?.resource === resource);
        expect(refusal).toMatchObject({ level: 30, err: { code: "FENCE_STALE_TOKEN" } });
      });
    }
  });
}

describeErrorFlow("memory", memoryFixture);
describeErrorFlow("Postgres", postgresFixture);
describeErrorFlow("Redis", redisFixture);
