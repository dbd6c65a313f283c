export type { CoordinationOptions } from "./cluster/index.js";
export { CoordinationState, MemoryCoordinationStore } from "./coordination/memory-store.js";
export {
  DEFAULT_OWNERSHIP_LEASE_MS,
  DEFAULT_OWNERSHIP_MARGIN_MS,
  ownershipHolder,
} from "./coordination/ownership.js";
export type {
  CoordinationStore,
  LeaseInfo,
  LeaseOutcome,
  OwnershipLease,
  VersionedDocument,
} from "./coordination/store.js";
export { CoordinatorUnavailableError } from "./coordination/store.js";
export type {
  AcquireInput,
  AcquireOutcome,
  Clock,
  EngineCounters,
  EngineEvents,
  EngineJournal,
  EngineLimits,
  EngineMeter,
  HeldKey,
  HolderKind,
  ListHeldInput,
  SemaphoreRule,
  Session,
  TryAcquireOutcome,
} from "./engine/index.js";
export {
  DEFAULT_ENGINE_LIMITS,
  LockEngine,
  monotonicClock,
  parseSemaphoreRules,
  SemaphoreRules,
  TokenIssuer,
} from "./engine/index.js";
export type { EpochKeeperOptions, LearnOutcome, TakenEpoch } from "./epoch/epoch-keeper.js";
export { EpochKeeper, longestHoldMs } from "./epoch/epoch-keeper.js";
export type { EpochPlan, EpochPlanInput } from "./epoch/epoch-plan.js";
export {
  clockRound,
  DEFAULT_MAX_CLOCK_SKEW_MS,
  EpochExhaustedError,
  MAX_LEAD_ROUNDS,
  planEpoch,
  ROUND_MS,
  ROUND_ORIGIN_MS,
} from "./epoch/epoch-plan.js";
export type { EpochStore } from "./epoch/epoch-store.js";
export { EpochStoreError, MemoryEpochStore } from "./epoch/epoch-store.js";
export type { ServerLimits } from "./limits.js";
export { DEFAULT_SERVER_LIMITS, resolveLimits, TIMER_MAX_MS } from "./limits.js";
export { SecretChecker } from "./net/auth.js";
export type { LockClusterOptions, LockServerOptions, TlsFiles } from "./net/server.js";
export { DEFAULT_PORT, LockServer } from "./net/server.js";
export type { AcquireSink, HolderTable, HoldReason, LockNodeOptions, NodeHooks, NodeRole } from "./node.js";
export { LockNode } from "./node.js";
export type { ServerObserver } from "./observer.js";
export { NO_OBSERVER } from "./observer.js";
export { REPORT_INTERVAL_MS, ReportLimiter } from "./report-limiter.js";
export { ClusterActives } from "./slots/cluster-actives.js";
export { SlotGate } from "./slots/slot-gate.js";
export { followSlotMap, SLOT_MAP_DOCUMENT, type SlotMapEvents } from "./slots/slot-map-follower.js";
export { SLOT_MOVE_POLL_MS, type SlotMoveEvents, SlotMoves } from "./slots/slot-moves.js";
export { EpochFile } from "./store/epoch-file.js";
