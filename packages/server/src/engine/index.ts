export type { Clock } from "./clock.js";
export { ManualClock, monotonicClock } from "./clock.js";
export type {
  AcquireInput,
  AcquireOutcome,
  EngineCounters,
  EngineEvents,
  EngineJournal,
  EngineLimits,
  EngineMeter,
  HeldKey,
  HolderKind,
  KeyHolder,
  ListHeldInput,
  Ownership,
  SnapshotHolder,
  TryAcquireOutcome,
} from "./engine.js";
export { DEFAULT_ENGINE_LIMITS, LockEngine } from "./engine.js";
export type { LockMode } from "./lock-mode.js";
export type { Session } from "./records.js";
export type { SemaphoreRule } from "./semaphore-rules.js";
export { parseSemaphoreRules, SemaphoreRules } from "./semaphore-rules.js";
export { TokenIssuer } from "./token-issuer.js";
