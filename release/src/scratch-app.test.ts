import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "@lock/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { InstalledLockd } from "./installed-lockd.js";
import { blockAfter, documentedInstalls, documentedOutput, exampleAfter } from "./markdown.js";
import { PrivateRedis } from "./redis-server.js";
import { run, ScratchApp } from "./scratch-app.js";

/**
 * A new user's app (scratch-app.ts) that installs the packed tarballs and what the READMEs' install
 * lines say, then runs the READMEs' examples as they are written (the lockd addresses aside) against
 * a real lockd, PostgreSQL and Redis, under `--pending-deprecation --throw-deprecation`. The lockd is
 * the packed one, started from the app's `node_modules/.bin`, and the packed `lock` CLI looks at it.
 */
const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const packed = inject("packed");
const README = join(REPO_ROOT, "README.md");
const FENCE_README = join(REPO_ROOT, "packages", "fence", "README.md");

const app = new ScratchApp();
let lockd: InstalledLockd;
/** A bin the app's install linked, as `npx --no <name>` finds it. */
const appBin = (name: string): string => join(app.folder, "node_modules", ".bin", name);
const redises: PrivateRedis[] = [];
/**
 * The examples' tables have fixed names (`orders`, `lock_fence`…) and the database is shared with
 * other runs: each test gets a schema of its own, first on its search path, dropped at the end.
 */
const schemaPrefix = `scratch_app_${randomBytes(4).toString("hex")}`;
const schemas: string[] = [];

/** Runs `code` in the app with PG_URL pointing into `schema` (PG_URL itself without one). */
function runInApp(code: string, { schema, redisUrl }: { schema?: string; redisUrl?: string } = {}) {
  const pgUrl = new URL(PG_URL);
  if (schema !== undefined) pgUrl.searchParams.set("options", `-c search_path=${schema}`);
  return app.run(code, { PG_URL: pgUrl.toString(), ...(redisUrl ? { REDIS_URL: redisUrl } : {}) });
}

/** Runs one statement with the app's pg. */
async function query(sql: string, schema?: string): Promise<Array<Record<string, unknown>>> {
  const stdout = await runInApp(
    `import pg from "pg";
    const client = new pg.Client(process.env.PG_URL);
    await client.connect();
    const { rows } = await client.query(${JSON.stringify(sql)});
    console.log(JSON.stringify(rows));
    await client.end();`,
    schema === undefined ? {} : { schema },
  );
  return JSON.parse(stdout);
}

async function freshSchema(): Promise<string> {
  const schema = `${schemaPrefix}_${schemas.length}`;
  schemas.push(schema);
  await query(`CREATE SCHEMA ${schema}`);
  return schema;
}

/** Every documented example that runs on its own, in the order the READMEs show them. */
const EXAMPLES = [
  { label: "README: Usage", path: README, heading: "Usage" },
  { label: "fence README: the read rule", path: FENCE_README, heading: "The read rule" },
  { label: "fence README: semaphore permits", path: FENCE_README, heading: "Semaphore permits" },
  { label: "fence README: memory store", path: FENCE_README, heading: "Memory store" },
  { label: "fence README: Postgres", path: FENCE_README, heading: "Postgres" },
  { label: "fence README: Redis", path: FENCE_README, heading: "Redis" },
  { label: "fence README: Fastify", path: FENCE_README, heading: "Fastify" },
];

/**
 * Runs `examples` one after the other in ONE database (one schema, one Redis), as a reader trying
 * them in that order would, each printing what its comments say, then checks what they left there.
 */
async function runInOneDatabase(examples: typeof EXAMPLES): Promise<void> {
  const schema = await freshSchema();
  const redis = await PrivateRedis.start();
  redises.push(redis);
  for (const { label, path, heading } of examples) {
    const example = exampleAfter(path, heading);
    // The Usage example's servers are placeholders: point them at the test's lockd.
    const code = example.replace(/servers: \[[^\]]*\]/, `servers: [${JSON.stringify(lockd.address)}]`);
    expect(code === example, `${label}: lockd addresses`).toBe(!example.includes("servers: ["));
    const printed = (await runInApp(code, { schema, redisUrl: redis.url })).split("\n").slice(0, -1);
    const documented = documentedOutput(blockAfter(path, heading).source);
    expect(printed, label).toEqual(
      documented.map((line) => (line ? expect.stringMatching(line) : expect.any(String))),
    );
  }
  expect(await query("SELECT id, status FROM orders", schema)).toEqual([{ id: 42, status: "paid" }]);
  const fences = await query("SELECT resource, token::text FROM lock_fence ORDER BY resource", schema);
  // The examples' own tokens (34) and the Usage example's real one from lockd, far above them.
  expect(fences).toEqual([
    { resource: "accounts:7", token: "34" },
    { resource: "invoices:7", token: "34" },
    { resource: "orders:42", token: expect.stringMatching(/^[1-9][0-9]{5,}$/) },
  ]);
}

/**
 * A user's TypeScript, against every entry point: the public API type-checks, and the internals
 * stripped from the declarations are not reachable (each `@ts-expect-error` fails the check if
 * the line compiles).
 */
const CONSUMER = `
import { Lock, LockClient, LockLostError } from "@lock/client";
import { type CoordinationStore, openCoordinationStore } from "@lock/coordinator";
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

export function coordinator(url: string): Promise<bigint> {
  const store: CoordinationStore = openCoordinationStore(url, { callTimeoutMs: 500 });
  return store.takeEpoch(0n);
}
`;

/** Type-checks the consumer and the READMEs' TypeScript examples as they are written, strictly. */
function typeCheck(): Promise<unknown> {
  const files = {
    "consumer.ts": CONSUMER,
    "readme-usage.ts": blockAfter(README, "Usage", ["ts"]).source,
    "fence-readme-fastify.ts": blockAfter(FENCE_README, "Fastify", ["ts"]).source,
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(app.folder, name), text);
  writeFileSync(
    join(app.folder, "tsconfig.json"),
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
      files: Object.keys(files),
    }),
  );
  // The workspace's compiler, the app's node_modules: what a user's `tsc` sees.
  return run(join(REPO_ROOT, "node_modules", ".bin", "tsc"), ["-p", join(app.folder, "tsconfig.json")], {
    cwd: app.folder,
  });
}

beforeAll(async () => {
  // Every tarball, and exactly the drivers the READMEs' install lines name, in the versions the
  // fence package is tested with.
  const fence = JSON.parse(readFileSync(join(REPO_ROOT, "packages", "fence", "package.json"), "utf8"));
  const root = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
  const versionOf = (name: string): string => {
    const tarball = packed.find((entry) => entry.name === name)?.tarball;
    const version = tarball ? `file:${tarball}` : (fence.dependencies?.[name] ?? fence.devDependencies[name]);
    if (version === undefined)
      throw new Error(`a README installs ${name}, which the fence package is not tested with`);
    return version;
  };
  const installs = [...documentedInstalls(README, "Usage"), ...documentedInstalls(FENCE_README, "Install")];
  const entries = (dev: boolean) =>
    installs.filter((entry) => entry.dev === dev).map(({ name }) => [name, versionOf(name)]);
  const dependencies = Object.fromEntries([
    ...packed.map(({ name, tarball }) => [name, `file:${tarball}`]),
    ...entries(false),
  ]);
  // For the TypeScript consumer: a Node app's own choice, not something the READMEs ask for.
  const devDependencies = Object.fromEntries([
    ...entries(true),
    ["@types/node", root.devDependencies["@types/node"]],
  ]);
  await app.install(dependencies, devDependencies);
  const dataDir = mkdtempSync(join(app.folder, "lockd-data-"));
  lockd = await InstalledLockd.start(appBin("lockd"), ["--listen", "127.0.0.1:0", "--data-dir", dataDir], {
    cwd: app.folder,
  });
});

afterAll(async () => {
  for (const schema of schemas) await query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await Promise.all([lockd?.stop(), ...redises.map((redis) => redis.stop())]);
  app.dispose();
});

describe("the packed packages in an app of their own", () => {
  it("installs with every internal dependency resolved to a tarball (no workspace: left)", () => {
    const lockfile = JSON.parse(readFileSync(join(app.folder, "package-lock.json"), "utf8"));
    const installed = Object.keys(lockfile.packages).filter(
      (path) => path.startsWith("node_modules/@lock/") || path === "node_modules/lockd",
    );
    expect(installed.sort()).toEqual(packed.map(({ name }) => `node_modules/${name}`).sort());
  });

  it("runs the packed lockd (its own dependencies declared) and its version through npx", async () => {
    const { stdout } = await run("npx", ["--no", "--", "lockd", "--version"], { cwd: app.folder });
    const manifest = JSON.parse(
      readFileSync(join(app.folder, "node_modules", "lockd", "package.json"), "utf8"),
    );
    expect(stdout).toBe(`${manifest.version}\n`);
    // The lockd beforeAll started from node_modules/.bin serves a lock (the tests below lock through it).
    expect(lockd.ready.port).toBeGreaterThan(0);
  });

  it("runs the packed lock CLI: `lock status` against the packed lockd", async () => {
    const { stdout } = await run(appBin("lock"), ["status", "--servers", lockd.address, "--json"], {
      cwd: app.folder,
    });
    const status = JSON.parse(stdout);
    expect(status.active).toBe(lockd.address);
    expect(status.nodes).toMatchObject([{ node: lockd.address, state: "up", role: "active" }]);
  });

  it("type-checks a TypeScript app and the READMEs' TypeScript examples with what the READMEs install (strict, skipLibCheck off)", async () => {
    await expect(typeCheck()).resolves.toBeDefined();
  });

  it("fails that type check with TS7016 without @types/pg: why the install lines name it", async () => {
    const types = join(app.folder, "node_modules", "@types", "pg");
    renameSync(types, `${types}-hidden`);
    try {
      await expect(typeCheck()).rejects.toMatchObject({ stdout: expect.stringMatching(/TS7016: .*'pg'/) });
    } finally {
      renameSync(`${types}-hidden`, types);
    }
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

  it("runs the README's and the fence README's examples one after the other in one database, as documented", async () => {
    await runInOneDatabase(EXAMPLES);
  });

  it("runs them in the opposite order in one database, as documented", async () => {
    await runInOneDatabase([...EXAMPLES].reverse());
  });
});
