import type { LockdCluster, LockdProcess } from "@lock/testkit";
import type { AdapterProcess } from "./adapter-process.js";

/** The lease every case asks for: long enough that no lease runs out during a case. */
export const LEASE_MS = 30_000;
/** The wait of an acquire that is expected to be granted: a bound for a broken client, not a target. */
export const WAIT_MS = 10_000;

/** Where the rules live: every case links the subsection of docs/protocol.md it checks. */
export const PROTOCOL_DOC = "docs/protocol.md";

/**
 * One conformance case: a scenario against real lockd processes that a client following
 * docs/protocol.md, "Writing a client", gets through, and one that breaks the rule does not.
 */
export interface ConformanceCase {
  /** Short and stable: the CLI's `--case` takes it. */
  readonly name: string;
  /** The rule it checks, in one sentence. */
  readonly rule: string;
  /** The anchor of the docs/protocol.md subsection that states the rule, e.g. `#matching-replies`. */
  readonly section: string;
  readonly run: (ctx: CaseContext) => Promise<void>;
}

/** What a case gets to work with. Everything it starts is stopped after it, whatever the outcome. */
export interface CaseContext {
  /** A key unique to this case and run, e.g. `c7f3.fifo.k`. */
  key(name: string): string;
  /** Starts an instance of the client under test, configured with `servers` (host:port). */
  client(servers: readonly string[]): Promise<AdapterProcess>;
  /** A lockd single node shared by the cases that need nothing special (keys keep them apart). */
  single(): Promise<LockdProcess>;
  /** A lockd single node of this case's own, with extra flags. */
  lockd(args: readonly string[]): Promise<LockdProcess>;
  /**
   * A three-node cluster of this case's own (extra flags for every node), whose node 0 serves and
   * whose standbys follow it. Its advertised addresses are FaultProxies in front of the nodes.
   */
  cluster(args?: readonly string[]): Promise<LockdCluster>;
  /** Runs `cleanup` after the case (the last registered first). */
  defer(cleanup: () => unknown): void;
  /**
   * Polls `check` until it holds, for server-side facts no reply announces (a waiter queued, a
   * standby synced). Fails the case, naming `what`, if the case's time runs out first.
   */
  until(what: string, check: () => Promise<boolean> | boolean): Promise<void>;
}
