export type { AcquireOptions, ConnectionStatus, TryAcquireOptions } from "./client.js";
export { LockClient } from "./client.js";
export type {
  ElectOptions,
  LeadershipListener,
  LeadershipLoss,
  LeadershipLossReason,
} from "./election.js";
export { Leadership } from "./election.js";
export type { ClientErrorCode } from "./errors.js";
export {
  AbortError,
  AuthError,
  CLIENT_ERROR_CODES,
  ClientClosedError,
  InvalidArgumentError,
  LockError,
  LockLostError,
  LockServerError,
  LockTimeoutError,
  NoServerError,
  ProtocolError,
} from "./errors.js";
export type { ClientEventListener, ClientEventName, ClientEvents, ConnectionRef } from "./events.js";
export type { LockState } from "./lock.js";
export { Lock } from "./lock.js";
export type { HolderState, ObserveOptions } from "./observe.js";
export type { LockClientOptions } from "./options.js";
export { checkKey, DEFAULT_OPTIONS } from "./options.js";
export type { SlotState } from "./server-pool.js";
export type { ClientSocket, ServerAddress, SocketFactory } from "./socket.js";
