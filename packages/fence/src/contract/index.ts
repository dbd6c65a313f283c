/**
 * `@lock/fence/testing`: the suite every FenceStore must pass, for authors of stores. It runs inside
 * the caller's vitest (an optional peer, as is fast-check); nothing else in the package imports it.
 */
export {
  type ContractFixture,
  describeFenceContract,
  MALFORMED_RESOURCES,
  MALFORMED_TOKENS,
  NOT_WRITES,
} from "./contract.js";
export {
  type KleppmannParticipants,
  outcomeOf,
  runKleppmannScenario,
  simulatedGrants,
  type WriteOutcome,
} from "./kleppmann.js";
export { describeReadFenceContract, type ReadContractFixture } from "./read-contract.js";
export { BOUNDARY_TOKENS } from "./tokens.js";
