import type { QueryResult, QueryResultRow } from "pg";

/** Anything that runs a parameterised query: a pg Pool, Client or PoolClient. */
export interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}
