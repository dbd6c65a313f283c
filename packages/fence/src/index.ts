export {
  FENCE_ERROR_CODES,
  FenceError,
  type FenceErrorCode,
  type StaleTokenCode,
  StaleTokenError,
} from "./errors.js";
export { fence, fenceRead } from "./fence.js";
export { checkFenceInput } from "./fence-input.js";
export {
  type FenceUse,
  type FencingGrant,
  type FencingLock,
  grantToken,
  type LockModeName,
} from "./grant.js";
export {
  FENCING_MODE_HEADER,
  FENCING_SLOT_HEADER,
  FENCING_TOKEN_HEADER,
  type FencingHeaders,
  fencingHeaders,
  parseFencingHeader,
  parseFencingRequest,
} from "./headers.js";
export { type MemoryFenceTx, MemoryStore, memoryStore } from "./memory.js";
export { assertResource, MAX_RESOURCE_LENGTH } from "./resource.js";
export {
  decideRead,
  decideWrite,
  type FenceDecision,
  type FenceMarks,
  type FenceRefusal,
} from "./rule.js";
export { parseSlotResource, type SlotLock, slotResource } from "./slot.js";
export type {
  FenceReadOptions,
  FenceReadTx,
  FenceStore,
  FenceTx,
  FenceWrite,
  ReadFenceStore,
} from "./store.js";
export { type FencingTokenInput, MAX_TOKEN, parseToken } from "./token.js";
