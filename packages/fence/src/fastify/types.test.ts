/**
 * The plugin's typings, checked by `tsc -b` (which compiles the tests): expectTypeOf does nothing at
 * run time, a wrong type fails the build. The README's Fastify example (src/testing/readme/fastify.ts)
 * is part of this program and augments FencePluginStore with PostgresStore, as an app would.
 */
import Fastify, { type FastifyRequest } from "fastify";
import { expectTypeOf, it } from "vitest";
import { MemoryStore } from "../memory.js";
import type { PostgresFenceTx, PostgresStore } from "../postgres/index.js";
import type { RedisFenceTx } from "../redis/index.js";
import type { FencedTx, FencePluginStore } from "./index.js";
import fencePlugin from "./plugin.js";

it("gives request.fenced()'s tx the transaction type of the store in FencePluginStore", () => {
  expectTypeOf<FencePluginStore["store"]>().toEqualTypeOf<PostgresStore>();
  expectTypeOf<FencedTx>().toEqualTypeOf<PostgresFenceTx>();
});

it("types a fenced route's resource function, handler, request.fenced() and its result", async () => {
  const app = Fastify();
  await app.register(fencePlugin, { store: new MemoryStore() });
  app.put<{ Params: { id: string } }>(
    "/orders/:id",
    {
      config: {
        fence: {
          resource: (request) => {
            expectTypeOf(request.params).toEqualTypeOf<Record<string, unknown>>();
            expectTypeOf(request.fencingToken).toEqualTypeOf<bigint | null>();
            return `orders:${request.params.id}`;
          },
        },
      },
    },
    async (request) => {
      expectTypeOf(request.params).toEqualTypeOf<{ id: string }>();
      expectTypeOf(request.fenceResource).toEqualTypeOf<string | null>();
      const inferred = request.fenced((tx) => {
        expectTypeOf(tx).toEqualTypeOf<PostgresFenceTx>();
        return 42 as const;
      });
      expectTypeOf(inferred).toEqualTypeOf<Promise<42>>();
      // An annotation wins over FencePluginStore: contexts may register stores of different kinds.
      const annotated = request.fenced((tx: RedisFenceTx) => tx.call("SET", "k", "v"));
      expectTypeOf(annotated).toEqualTypeOf<Promise<unknown>>();
      return null;
    },
  );
  // A resource function annotated with the route's own request type is accepted as well.
  app.get("/typed/:id", {
    config: {
      fence: { resource: (request: FastifyRequest<{ Params: { id: string } }>) => request.params.id },
    },
    handler: async () => null,
  });
  // @ts-expect-error a resource must be a string
  app.get("/numeric", { config: { fence: { resource: () => 42 } }, handler: async () => null });
  await app.close();
});
