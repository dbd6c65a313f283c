/**
 * The README's Fastify example (src/testing/readme/fastify.ts, which readme.test.ts holds equal to the
 * README and types.test.ts checks the inferred types of), run against the real Postgres in a schema of
 * its own, and held to the output its comments promise.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { PG_URL, type PgSandbox, pgSandbox } from "../testing/sandbox.js";

const EXAMPLE = new URL("../testing/readme/fastify.ts", import.meta.url);

describe("README: the Fastify example", () => {
  let sandbox: PgSandbox;
  beforeAll(async () => {
    sandbox = await pgSandbox(1);
  });
  afterAll(() => sandbox?.close());

  it("runs, and prints what its comments say", async () => {
    // Everything it creates lands in the sandbox's schema: the example's pool connects with it first
    // on the search_path.
    const url = new URL(PG_URL);
    url.searchParams.set("options", `-c search_path=${sandbox.schema}`);
    vi.stubEnv("PG_URL", url.href);
    const printed: unknown[][] = [];
    const log = vi.spyOn(console, "log").mockImplementation((...args) => void printed.push(args));
    try {
      await import(EXAMPLE.href);
    } finally {
      log.mockRestore();
      vi.unstubAllEnvs();
    }
    expect(printed).toEqual([
      [200, { token: "34", resource: "invoices:7" }],
      [
        409,
        {
          statusCode: 409,
          code: "FENCE_STALE_TOKEN",
          error: "Conflict",
          message: 'stale fencing token for "invoices:7": presented 33, the resource already accepted 34',
        },
      ],
    ]);
    const { rows } = await sandbox.pool.query(`SELECT id, status FROM "${sandbox.schema}".invoices`);
    expect(rows).toEqual([{ id: "7", status: "paid" }]);
  });
});
