import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { InstalledLockd } from "./installed-lockd.js";
import { exampleAfter } from "./markdown.js";
import { PrivateRedis } from "./redis-server.js";

/**
 * A new user's app: a folder outside the workspace that `npm install`s the packed tarballs and the
 * drivers from the registry, then runs the READMEs' examples as they are written (the lockd
 * addresses aside) against a real lockd, PostgreSQL and Redis, under the Node flags some CI setups
 * use: a deprecated API anywhere is fatal. The lockd is the packed one, started from the app's
 * `node_modules/.bin`, and the packed `lock` CLI looks at it.
 */
const run = promisify(execFile);
const STRICT = "--pending-deprecation --throw-deprecation";
const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const packed = inject("packed");

let app: string;
let lockd: InstalledLockd;
let redis: PrivateRedis;
/**
 * The examples' tables have fixed names (`orders`, `lock_fence`…) and the database is shared: each
 * example gets a schema of its own, first on its search path, dropped at the end.
 */
const schemaPrefix = `scratch_app_${randomBytes(4).toString("hex")}`;
const schemas: string[] = [];
let examples = 0;

/**
 * Runs `code` as an ES module in the app folder (so imports resolve to what npm installed), with
 * PG_URL pointing into `schema` when one is given; its stdout.
 */
async function runInApp(code: string, schema?: string): Promise<string> {
  const file = join(app, `example-${++examples}.mjs`);
  writeFileSync(file, code);
  const pgUrl = new URL(PG_URL);
  if (schema !== undefined) pgUrl.searchParams.set("options", `-c search_path=${schema}`);
  const { stdout } = await run(process.execPath, [file], {
    cwd: app,
    env: {
      PATH: process.env.PATH ?? "",
      NODE_OPTIONS: STRICT,
      PG_URL: pgUrl.toString(),
      REDIS_URL: redis.url,
    },
  });
  return stdout;
}

/** Runs one statement on PG_URL itself (outside any example's schema), with the app's pg. */
async function onTheDatabase(sql: string): Promise<void> {
  await runInApp(`
    import pg from "pg";
    const client = new pg.Client(process.env.PG_URL);
    await client.connect();
    await client.query(${JSON.stringify(sql)});
    await client.end();
  `);
}

async function freshSchema(): Promise<string> {
  const schema = `${schemaPrefix}_${schemas.length}`;
  schemas.push(schema);
  await onTheDatabase(`CREATE SCHEMA ${schema}`);
  return schema;
}

/** A bin the app's install linked, as `npx --no <name>` finds it. */
const appBin = (name: string): string => join(app, "node_modules", ".bin", name);

const fenceReadme = join(REPO_ROOT, "packages", "fence", "README.md");

/**
 * A user's TypeScript, against every entry point: the public API type-checks, and the internals
 * stripped from the declarations are not reachable (each `@ts-expect-error` fails the check if
 * the line compiles).
 */
const CONSUMER = `
import { Lock, LockClient, LockLostError } from "@lock/client";
import { DeadlineHeap, ManualClock } from "@lock/deadline-heap";
import { fence, memoryStore, StaleTokenError } from "@lock/fence";
import { fencePlugin, fencingHeaders } from "@lock/fence/fastify";
import { postgresStore } from "@lock/fence/postgres";
import { redisStore } from "@lock/fence/redis";
import { formatAddress, RequestDecoder } from "@lock/protocol";
import { LockServer } from "@lock/server";
import { SocketWriter, useFastIo } from "@lock/socket-io";

export async function work(client: LockClient): Promise<bigint> {
  const lock: Lock = await client.acquire("orders:42", { leaseMs: 30_000, waitMs: 5_000 });
  const seen: boolean = lock instanceof Lock && !(lock.signal.reason instanceof LockLostError);
  await fence(memoryStore(), "orders:42", lock.token, () => seen);
  // @ts-expect-error the constructor is private
  new Lock();
  // @ts-expect-error internal, stripped
  lock.startAutoExtend();
  // @ts-expect-error internal, stripped
  Lock.create;
  await lock.release();
  return lock.token;
}

export const parts = [DeadlineHeap, ManualClock, StaleTokenError, fencePlugin, fencingHeaders, postgresStore,
  redisStore, formatAddress, RequestDecoder, LockServer, SocketWriter, useFastIo];
`;

beforeAll(async () => {
  app = mkdtempSync(join(tmpdir(), "lock-scratch-app-"));
  // The driver versions the fence package is tested with.
  const fence = JSON.parse(readFileSync(join(REPO_ROOT, "packages", "fence", "package.json"), "utf8"));
  const driverVersion = (name: string): string => fence.dependencies?.[name] ?? fence.devDependencies[name];
  const root = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
  const dependencies = Object.fromEntries([
    ...packed.map(({ name, tarball }) => [name, `file:${tarball}`]),
    ...["pg", "ioredis", "fastify", "fastify-plugin", "@types/pg"].map((name) => [name, driverVersion(name)]),
    // For the TypeScript consumer below.
    ["@types/node", root.devDependencies["@types/node"]],
  ]);
  writeFileSync(
    join(app, "package.json"),
    JSON.stringify({ name: "scratch-app", private: true, type: "module", dependencies }, null, 2),
  );
  // Drivers come from the npm cache when it has them; only the npm registry is needed otherwise.
  await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], {
    cwd: app,
  });
  const dataDir = mkdtempSync(join(app, "lockd-data-"));
  [lockd, redis] = await Promise.all([
    InstalledLockd.start(appBin("lockd"), ["--listen", "127.0.0.1:0", "--data-dir", dataDir], { cwd: app }),
    PrivateRedis.start(),
  ]);
});

afterAll(async () => {
  for (const schema of schemas) await onTheDatabase(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await Promise.all([lockd?.stop(), redis?.stop()]);
  if (app !== undefined) rmSync(app, { recursive: true, force: true });
});

describe("the packed packages in an app of their own", () => {
  it("installs with every internal dependency resolved to a tarball (no workspace: left)", () => {
    const lockfile = JSON.parse(readFileSync(join(app, "package-lock.json"), "utf8"));
    const installed = Object.keys(lockfile.packages).filter(
      (path) => path.startsWith("node_modules/@lock/") || path === "node_modules/lockd",
    );
    expect(installed.sort()).toEqual(packed.map(({ name }) => `node_modules/${name}`).sort());
  });

  it("runs the packed lockd (its own dependencies declared) and its version through npx", async () => {
    const { stdout } = await run("npx", ["--no", "--", "lockd", "--version"], { cwd: app });
    const manifest = JSON.parse(readFileSync(join(app, "node_modules", "lockd", "package.json"), "utf8"));
    expect(stdout).toBe(`${manifest.version}\n`);
    // The lockd beforeAll started from node_modules/.bin serves a lock (the tests below lock through it).
    expect(lockd.ready.port).toBeGreaterThan(0);
  });

  it("runs the packed lock CLI: `lock status` against the packed lockd", async () => {
    const { stdout } = await run(appBin("lock"), ["status", "--servers", lockd.address, "--json"], {
      cwd: app,
    });
    const status = JSON.parse(stdout);
    expect(status.active).toBe(lockd.address);
    expect(status.nodes).toMatchObject([{ node: lockd.address, state: "up", role: "active" }]);
  });

  it("type-checks a TypeScript app against the packed declarations (strict, skipLibCheck off)", async () => {
    writeFileSync(join(app, "consumer.ts"), CONSUMER);
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2022",
          lib: ["ES2023"],
          types: ["node"],
          strict: true,
          skipLibCheck: false,
          noEmit: true,
        },
        files: ["consumer.ts"],
      }),
    );
    // The workspace's compiler, the app's node_modules: what a user's `tsc` sees.
    const tsc = join(REPO_ROOT, "node_modules", ".bin", "tsc");
    await expect(run(tsc, ["-p", join(app, "tsconfig.json")], { cwd: app })).resolves.toBeDefined();
  });

  it("imports @lock/client, and locks through it, under --pending-deprecation --throw-deprecation", async () => {
    const stdout = await runInApp(`
      import { LockClient } from "@lock/client";
      const client = new LockClient({ servers: [${JSON.stringify(lockd.address)}] });
      const lock = await client.acquire("scratch:strict", { leaseMs: 5_000 });
      console.log(typeof lock.token, await lock.release());
      await client.close();
    `);
    expect(stdout).toBe("bigint true\n");
  });

  it("runs the README's usage example (client, fence, Postgres) against lockd", async () => {
    // The example creates its own tables: it runs as it stands, in an empty schema.
    const schema = await freshSchema();
    const example = exampleAfter(join(REPO_ROOT, "README.md"), "Usage");
    const pointed = example.replace(/servers: \[[^\]]*\]/, `servers: [${JSON.stringify(lockd.address)}]`);
    expect(pointed).not.toBe(example);
    await runInApp(pointed, schema);
    const check = `
      import pg from "pg";
      const pool = new pg.Pool({ connectionString: process.env.PG_URL });
      const orders = await pool.query("SELECT status FROM orders WHERE id = 42");
      const fences = await pool.query("SELECT resource FROM lock_fence");
      console.log(JSON.stringify([orders.rows, fences.rows]));
      await pool.end();
    `;
    expect(JSON.parse(await runInApp(check, schema))).toEqual([
      [{ status: "paid" }],
      [{ resource: "orders:42" }],
    ]);
  });

  it("runs the fence README's Postgres example", async () => {
    const stdout = await runInApp(exampleAfter(fenceReadme, "Postgres"), await freshSchema());
    expect(stdout).toMatch(/^balance now 90\nrefused: /);
  });

  it("runs the fence README's Redis example", async () => {
    const stdout = await runInApp(exampleAfter(fenceReadme, "Redis"));
    expect(stdout).toContain("fenceKey: '7'");
  });

  it("runs the fence README's Fastify example", async () => {
    // Its store may be Postgres (tables of its own) or memory.
    const stdout = await runInApp(exampleAfter(fenceReadme, "Fastify"), await freshSchema());
    expect(stdout).toMatch(/^200 .*\n409 /);
  });
});
