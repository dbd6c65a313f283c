export type {
  CoordinationStore,
  LeaseInfo,
  LeaseOutcome,
  OwnershipLease,
  VersionedDocument,
} from "@lock/server";
export { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_WATCH_RESYNC_MS } from "./deadline.js";
export { COORDINATOR_ERROR_CODES, CoordinatorUnavailableError, CoordinatorUrlError } from "./errors.js";
export type { EtcdTls } from "./etcd/gateway.js";
export type { EtcdStoreOptions } from "./etcd/store.js";
export { EtcdCoordinationStore } from "./etcd/store.js";
export type { OpenCoordinationStoreOptions } from "./open.js";
export {
  MAX_CALL_TIMEOUT_MS,
  openCoordinationStore,
  PASSWORD_FILE_VARIABLE,
  PASSWORD_VARIABLE,
} from "./open.js";
export { DEFAULT_SCHEMA } from "./postgres/schema.js";
export type { PostgresStoreOptions } from "./postgres/store.js";
export { DEFAULT_POOL_SIZE, PostgresCoordinationStore } from "./postgres/store.js";
export type { CoordinatorTarget, EtcdTarget, PostgresTarget } from "./url.js";
export { DEFAULT_ETCD_PREFIX, parseCoordinatorUrl } from "./url.js";
