import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PgSandbox, pgSandbox } from "../testing/sandbox.js";
import {
  createFenceTable,
  FENCE_TABLE_SQL,
  fenceColumnSql,
  fenceTableSql,
  quoteQualifiedName,
} from "./index.js";

describe("fence table migration", () => {
  it("ships sql/fence-table.sql equal to FENCE_TABLE_SQL", async () => {
    const file = await readFile(new URL("../../sql/fence-table.sql", import.meta.url), "utf8");
    const statements = file
      .split("\n")
      .filter((line) => !line.startsWith("--"))
      .join("\n")
      .trim();
    expect(statements).toBe(FENCE_TABLE_SQL.trim());
  });

  it("quotes a configured table name and refuses anything but plain identifiers", () => {
    expect(fenceTableSql("ops.Fences")).toContain('CREATE TABLE IF NOT EXISTS "ops"."Fences" (');
    expect(quoteQualifiedName("lock_fence")).toBe('"lock_fence"');
    for (const bad of ["", "a.b.c", "1table", 'x"y', "x;DROP TABLE y", "a b", "a".repeat(64), "ops."]) {
      expect(() => fenceTableSql(bad), bad).toThrow(
        expect.objectContaining({ code: "FENCE_BAD_IDENTIFIER" }),
      );
    }
  });

  describe("on a real server", () => {
    let sandbox: PgSandbox;
    beforeAll(async () => {
      sandbox = await pgSandbox(1);
    });
    afterAll(() => sandbox?.close());

    it("creates the table idempotently and bounds tokens to the u64 range", async () => {
      const table = sandbox.table("fence");
      await createFenceTable(sandbox.pool, table);
      await createFenceTable(sandbox.pool, table);
      await sandbox.pool.query(`INSERT INTO ${table} (resource, token) VALUES ('max', 18446744073709551615)`);
      await expect(
        sandbox.pool.query(`INSERT INTO ${table} (resource, token) VALUES ('over', 18446744073709551616)`),
      ).rejects.toThrow(/check constraint|overflow/);
      await expect(
        sandbox.pool.query(`INSERT INTO ${table} (resource, token) VALUES ('neg', -1)`),
      ).rejects.toThrow(/check constraint/);
    });

    it("adds a fence column to an existing table", async () => {
      const table = sandbox.table("orders");
      await sandbox.pool.query(`CREATE TABLE ${table} (id int PRIMARY KEY)`);
      await sandbox.pool.query(fenceColumnSql(table));
      await sandbox.pool.query(fenceColumnSql(table)); // IF NOT EXISTS
      const { rows } = await sandbox.pool.query(
        "SELECT data_type, numeric_precision FROM information_schema.columns WHERE table_schema = $1 AND column_name = 'fence_token'",
        [sandbox.schema],
      );
      expect(rows).toEqual([{ data_type: "numeric", numeric_precision: 20 }]);
    });
  });
});
