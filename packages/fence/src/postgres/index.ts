export type { Queryable } from "./queryable.js";
export { type FenceRowOptions, fenceRow } from "./row.js";
export {
  createFenceTable,
  DEFAULT_FENCE_TABLE,
  FENCE_TABLE_SQL,
  fenceColumnSql,
  fenceTableSql,
} from "./schema.js";
export { quoteIdentifier, quoteQualifiedName } from "./sql.js";
export { type SqlStatement, type SqlStatementsWrite, sqlStatements } from "./statements-write.js";
export { type PostgresFenceTx, PostgresStore, type PostgresStoreOptions, postgresStore } from "./store.js";
