export { FENCE_ERROR_CODES, FenceError, type FenceErrorCode, StaleTokenError } from "./errors.js";
export { fence } from "./fence.js";
export { checkFenceInput } from "./fence-input.js";
export { FENCING_TOKEN_HEADER, fencingHeaders, parseFencingHeader } from "./headers.js";
export { type MemoryFenceTx, MemoryStore, memoryStore } from "./memory.js";
export { assertResource, MAX_RESOURCE_LENGTH } from "./resource.js";
export type { FenceStore, FenceTx, FenceWrite } from "./store.js";
export { type FencingTokenInput, MAX_TOKEN, parseToken } from "./token.js";
