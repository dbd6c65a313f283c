export { formatAddress, splitAddress } from "./address.js";
export type { DecodeError } from "./decode-error.js";
export { isDecodeError, toErrorReply } from "./decode-error.js";
export { ReplyDecoder, RequestDecoder } from "./decoders.js";
export { formatSeconds, MAX_DURATION_MS, parseSeconds } from "./duration.js";
export { encodePeer, encodeReply, encodeRequest } from "./encode.js";
export {
  isRequestOp,
  isValidAddress,
  isValidId,
  isValidInfoName,
  isValidInfoValue,
  isValidNonce,
  isValidPeerHex,
  isValidSecret,
  MAX_ID_LENGTH,
  MAX_NONCE_LENGTH,
  MAX_SECRET_LENGTH,
  PEER_HEX_LENGTH,
  utf8ByteLength,
  validateKey,
} from "./fields.js";
export { hashTag, KEY_SLOTS, keySlot } from "./key-slot.js";
export type { ProtocolLimits } from "./limits.js";
export { checkLimits, checkLineLimit, DEFAULT_LIMITS } from "./limits.js";
export { LineDecoder } from "./line-decoder.js";
export type { LockMode } from "./lock-mode.js";
export {
  EXCLUSIVE,
  formatLockMode,
  formatSlot,
  MAX_PERMITS,
  parseLockMode,
  permits,
  SHARED,
} from "./lock-mode.js";
export type {
  AcquireRequest,
  BundleGrantedReply,
  BundleRequest,
  CancelledReply,
  CancelRequest,
  ErrorCode,
  ErrorReply,
  ExtendedReply,
  ExtendRequest,
  GrantedReply,
  HelloReply,
  HelloRequest,
  InfoReply,
  InfoRequest,
  KeyspaceReply,
  KeyspaceRequest,
  ModeAcquireRequest,
  ModeGrantedReply,
  ModeTryAcquireRequest,
  PingRequest,
  PongReply,
  RedirectReply,
  ReleasedReply,
  ReleaseRequest,
  Reply,
  ReplyKind,
  Request,
  RequestOp,
  SlotRedirectReply,
  TimedOutReply,
  TryAcquireRequest,
  TryBusyReply,
  TryGrantedReply,
} from "./messages.js";
export { ERROR_CODES, FATAL_CODES, MAX_BUNDLE_LINE_KEYS, RETRYABLE_CODES } from "./messages.js";
export { parseReplyLine } from "./parse-reply.js";
export { parseRequestLine } from "./parse-request.js";
export type {
  AckFrame,
  HandoffFrame,
  HeartbeatFrame,
  JoinFrame,
  NewEpochFrame,
  NodeRole,
  PeerChallengeFrame,
  PeerFrame,
  PeerHelloFrame,
  PeerProofFrame,
  PeerVerb,
  ReplicatedExtendFrame,
  ReplicatedFreeFrame,
  ReplicatedGrantFrame,
  ReplicatedSharedGrantFrame,
  SharedHold,
  SnapshotBeginFrame,
  SnapshotEndFrame,
  SnapshotHolderFrame,
  SnapshotSharedHolderFrame,
} from "./peer.js";
export { isPeerFrame, WHOLE_KEY } from "./peer.js";
export type { SlotRange } from "./slot-map.js";
export {
  isValidClusterName,
  MAX_CLUSTER_ADDRESSES,
  MAX_SLOT_MAP_BYTES,
  MAX_SLOT_MAP_CLUSTERS,
  MAX_SLOT_MAP_RANGES,
  SlotMap,
  SlotMapError,
} from "./slot-map.js";
export {
  composeEpoch,
  composeToken,
  EPOCH_BITS,
  epochNodeId,
  epochRound,
  formatToken,
  isValidEpoch,
  MAX_EPOCH,
  MAX_NODE_ID,
  MAX_ROUND,
  MAX_SEQUENCE,
  MAX_TOKEN,
  NODE_ID_BITS,
  parseToken,
  ROUND_BITS,
  SEQUENCE_BITS,
  tokenEpoch,
  tokenSequence,
} from "./token.js";
export { MAX_STATE_HOLDERS } from "./watch.js";
export type { KeyStateReply, UnwatchedReply, UnwatchRequest, WatchRequest } from "./watch-messages.js";
