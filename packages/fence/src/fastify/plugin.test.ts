import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MemoryStore } from "../memory.js";
import type { FenceStore } from "../store.js";
import { fencingHeaders } from "./index.js";
import fencePlugin from "./plugin.js";

/** An app with one fenced route echoing what the handler sees, and one plain route. */
async function appWith(store: FenceStore<unknown>): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(fencePlugin, { store });
  app.put<{ Params: { id: string } }>(
    "/orders/:id",
    { config: { fence: { resource: (request) => `orders:${request.params.id}` } } },
    async (request) => ({ token: String(request.fencingToken), resource: request.fenceResource }),
  );
  app.get("/health", async (request) => ({ token: request.fencingToken }));
  return app;
}

describe("fence plugin", () => {
  let app: FastifyInstance;
  let store: MemoryStore;
  beforeAll(async () => {
    store = new MemoryStore();
    app = await appWith(store);
  });
  afterAll(() => app?.close());

  const put = (id: string, headers: Record<string, string> = {}) =>
    app.inject({ method: "PUT", url: `/orders/${id}`, headers });

  it("answers 200 and exposes the accepted token and resource to the handler", async () => {
    const response = await put("1", fencingHeaders({ token: 2n ** 64n - 1n }));
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ token: "18446744073709551615", resource: "orders:1" });
    expect(await store.current("orders:1")).toBe(2n ** 64n - 1n);
  });

  it("answers 400 FENCE_MISSING_TOKEN without the header", async () => {
    const response = await put("2");
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      statusCode: 400,
      code: "FENCE_MISSING_TOKEN",
      error: "Bad Request",
      message: "the fencing-token header is required",
    });
  });

  for (const malformed of ["abc", "-1", "1e3", "007", "1.5", "0x10", "18446744073709551616"]) {
    it(`answers 400 FENCE_BAD_TOKEN for the header ${JSON.stringify(malformed)}`, async () => {
      const response = await put("3", { "fencing-token": malformed });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ code: "FENCE_BAD_TOKEN", message: expect.any(String) });
    });
  }

  it("answers 409 FENCE_STALE_TOKEN with Fastify's usual error body, the tokens in the message", async () => {
    await put("4", { "fencing-token": "9007199254740993" });
    const response = await put("4", { "fencing-token": "9007199254740992" });
    expect(response.statusCode).toBe(409);
    expect(response.json()).toEqual({
      statusCode: 409,
      code: "FENCE_STALE_TOKEN",
      error: "Conflict",
      message:
        'stale fencing token for "orders:4": presented 9007199254740992, the resource already accepted 9007199254740993',
    });
  });

  it("leaves routes without config.fence alone", async () => {
    const response = await app.inject({ method: "GET", url: "/health" });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ token: null });
  });

  it("serves a real socket: fetch with fencingHeaders() from a held lock", async () => {
    const address = await app.listen({ port: 0, host: "127.0.0.1" });
    const send = (token: bigint) =>
      fetch(`${address}/orders/socket`, { method: "PUT", headers: fencingHeaders({ token }) });
    const accepted = await send(2n ** 63n);
    expect(accepted.status).toBe(200);
    expect(await accepted.json()).toEqual({ token: String(2n ** 63n), resource: "orders:socket" });
    const stale = await send(2n ** 63n - 1n);
    expect(stale.status).toBe(409);
    expect(stale.headers.get("content-type")).toMatch(/application\/json/);
    expect(await stale.json()).toMatchObject({
      code: "FENCE_STALE_TOKEN",
      message: /accepted 9223372036854775808$/,
    });
    const missing = await fetch(`${address}/orders/socket`, { method: "PUT" });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ code: "FENCE_MISSING_TOKEN" });
  });
});

describe("fence plugin registration", () => {
  let app: FastifyInstance | undefined;
  afterEach(() => app?.close());

  it("refuses a second registration where the first is visible (same context or a child)", async () => {
    for (const registerAgain of [
      (instance: FastifyInstance) => instance.register(fencePlugin, { store: new MemoryStore() }),
      (instance: FastifyInstance) =>
        instance.register(async (child) => {
          await child.register(fencePlugin, { store: new MemoryStore() });
        }),
    ]) {
      const instance = Fastify();
      instance.register(fencePlugin, { store: new MemoryStore() });
      registerAgain(instance);
      await expect(instance.ready()).rejects.toMatchObject({ code: "FENCE_PLUGIN_REGISTERED" });
      await instance.close();
    }
  });

  it("lets sibling contexts each register their own store", async () => {
    const storeA = new MemoryStore();
    const storeB = new MemoryStore();
    app = Fastify();
    for (const [prefix, store] of [
      ["/a", storeA],
      ["/b", storeB],
    ] as const) {
      app.register(
        async (child) => {
          await child.register(fencePlugin, { store });
          child.post("/doc", { config: { fence: { resource: "doc" } } }, async () => "ok");
        },
        { prefix },
      );
    }
    const post = (prefix: string, token: string) =>
      app!.inject({ method: "POST", url: `${prefix}/doc`, headers: { "fencing-token": token } });
    expect((await post("/a", "10")).statusCode).toBe(200);
    expect((await post("/b", "3")).statusCode).toBe(200);
    expect((await post("/a", "3")).statusCode).toBe(409);
    expect([await storeA.current("doc"), await storeB.current("doc")]).toEqual([10n, 3n]);
  });

  it("refuses unusable plugin and route options clearly", async () => {
    app = Fastify();
    app.register(fencePlugin, { store: undefined as never });
    await expect(app.ready()).rejects.toMatchObject({ code: "FENCE_BAD_OPTIONS" });
    await app.close();

    app = Fastify();
    await app.register(fencePlugin, { store: new MemoryStore() });
    expect(() => app!.get("/x", { config: { fence: { resource: 42 as never } } }, async () => "")).toThrow(
      expect.objectContaining({ code: "FENCE_BAD_OPTIONS" }),
    );
  });

  it("reads a custom header, and rejects request.fenced() on unfenced routes", async () => {
    app = Fastify();
    await app.register(fencePlugin, { store: new MemoryStore(), header: "X-Lock-Token" });
    app.post("/doc", { config: { fence: { resource: "doc" } } }, async (request) =>
      String(request.fencingToken),
    );
    app.post("/plain", async (request) => request.fenced(() => "never"));
    const fenced = await app.inject({ method: "POST", url: "/doc", headers: { "x-lock-token": "12" } });
    expect(fenced.body).toBe("12");
    const missing = await app.inject({ method: "POST", url: "/doc", headers: { "fencing-token": "12" } });
    expect(missing.json()).toMatchObject({
      code: "FENCE_MISSING_TOKEN",
      message: "the x-lock-token header is required",
    });
    const plain = await app.inject({ method: "POST", url: "/plain" });
    expect(plain.statusCode).toBe(500);
    expect(plain.json()).toMatchObject({ code: "FENCE_BAD_OPTIONS" });
  });
});
