import { randomUUID } from "node:crypto";
import type { VersionedDocument } from "@lock/server";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { describeCoordinationContract, eventually, takeEpochOnceBack } from "../contract.test.support.js";
import { PostgresCoordinationStore } from "./store.js";

const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const schemas: string[] = [];
const freshSchema = () => {
  const schema = `coord_test_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
  schemas.push(schema);
  return schema;
};
afterAll(async () => {
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});

const schema = freshSchema();
describeCoordinationContract("postgres", {
  open: () => new PostgresCoordinationStore({ connectionString: PG_URL, schema }),
  ttlMs: 300,
});

describe("postgres: a dropped connection", () => {
  it("keeps serving and watching after every session of the store is terminated", async () => {
    const own = freshSchema();
    const store = new PostgresCoordinationStore({ connectionString: PG_URL, schema: own });
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    try {
      const before = await store.takeEpoch(0n);
      const seen: Array<VersionedDocument | undefined> = [];
      const stop = store.watchDocument("slots", (document) => seen.push(document));
      await eventually(() => seen.length === 1, 5000, "the initial state");
      const { rows } = await admin.query(
        "SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = $1",
        [`lockd-coordinator:${own}`],
      );
      expect(rows.length).toBeGreaterThanOrEqual(2); // the pool's and the LISTEN connection
      // A call that was on a dying connection may fail; the store opens new ones by itself.
      const after = await takeEpochOnceBack(store, 5000);
      expect(after).toBeGreaterThan(before);
      const version = await store.writeDocument("slots", "after", 0n);
      await eventually(() => seen.at(-1)?.version === version, 5000, "the watch after its connection died");
      stop();
    } finally {
      await admin.end();
      await store.close();
    }
  });
});

describe("postgres: a lost notification", () => {
  it("still reaches the watch: every watched document is read again now and then", async () => {
    const own = freshSchema();
    const store = new PostgresCoordinationStore({
      connectionString: PG_URL,
      schema: own,
      watchResyncMs: 200,
    });
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    try {
      const first = (await store.writeDocument("slots", "first", 0n))!;
      const seen: Array<VersionedDocument | undefined> = [];
      const stop = store.watchDocument("slots", (document) => seen.push(document));
      await eventually(() => seen.at(-1)?.version === first, 5000, "the initial state");
      // A write whose notification never comes (as if the LISTEN connection had missed it).
      await admin.query(
        `UPDATE "${own}".documents SET value = 'quiet', version = version + 1 WHERE name = 'slots'`,
      );
      await eventually(() => seen.at(-1)?.version === first + 1n, 5000, "the unnotified change");
      expect(seen).toEqual([
        { value: "first", version: first },
        { value: "quiet", version: first + 1n },
      ]);
      stop();
    } finally {
      await admin.end();
      await store.close();
    }
  });
});
