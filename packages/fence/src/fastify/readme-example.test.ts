/**
 * The README's Fastify example is src/testing/readme/fastify.ts, character for character: `tsc -b`
 * type-checks that file (types.test.ts checks what it infers), and this test runs it against the real
 * Postgres, in a schema of its own, and holds it to the output its comments promise.
 */
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { PG_URL, type PgSandbox, pgSandbox } from "../testing/sandbox.js";

const EXAMPLE = new URL("../testing/readme/fastify.ts", import.meta.url);

/** The first ```ts block after `heading` in README.md. */
async function readmeBlock(heading: string): Promise<string> {
  const readme = await readFile(new URL("../../README.md", import.meta.url), "utf8");
  const section = readme.slice(readme.indexOf(heading));
  const start = section.indexOf("```ts\n") + "```ts\n".length;
  return section.slice(start, section.indexOf("\n```", start) + 1);
}

describe("README: the Fastify example", () => {
  let sandbox: PgSandbox;
  beforeAll(async () => {
    sandbox = await pgSandbox(1);
  });
  afterAll(() => sandbox?.close());

  it("is the type-checked file", async () => {
    expect(await readmeBlock("## Fastify: `@lock/fence/fastify`")).toBe(await readFile(EXAMPLE, "utf8"));
  });

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
      [200, { token: "34", resource: "orders:42" }],
      [
        409,
        {
          statusCode: 409,
          code: "FENCE_STALE_TOKEN",
          error: "Conflict",
          message: 'stale fencing token for "orders:42": presented 33, the resource already accepted 34',
        },
      ],
    ]);
    const { rows } = await sandbox.pool.query(`SELECT id, status FROM "${sandbox.schema}".orders`);
    expect(rows).toEqual([{ id: "42", status: "paid" }]);
  });
});
