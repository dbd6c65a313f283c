import { randomBytes } from "node:crypto";
import { LockdCluster, LockdProcess } from "@lock/testkit";
import { AdapterProcess } from "./adapter-process.js";
import type { CaseContext, ConformanceCase } from "./case.js";
import { PROTOCOL_DOC } from "./case.js";
import { basicCases } from "./cases/basic.js";
import { clusterCases } from "./cases/cluster.js";
import { matchingCases } from "./cases/matching.js";
import { retryCases } from "./cases/retry.js";

/** Every case, in the order the suite runs them: single-node rules first, then failures, then clusters. */
export const CASES: readonly ConformanceCase[] = [
  ...basicCases,
  ...matchingCases,
  ...retryCases,
  ...clusterCases,
];

export interface RunOptions {
  /** How to start the adapter of the client under test, e.g. `["python3", "adapter.py"]`. */
  readonly command: readonly string[];
  /**
   * How long one case may take before it fails as hung: a bound for a client that never answers,
   * not a performance target (every case takes a few seconds at most). 30 s by default.
   */
  readonly caseTimeoutMs?: number;
}

const DEFAULT_CASE_TIMEOUT_MS = 30_000;
const POLL_MS = 10;

/**
 * Runs cases against one client command. Holds what cases share (one lockd single node, started on
 * first use); everything else a case starts is stopped when the case ends. `dispose()` at the end.
 */
export class ConformanceRun {
  readonly #options: RunOptions;
  #single: Promise<LockdProcess> | undefined;
  #instances = 0;
  /** How to stop what each running case started, for dispose() on an interrupt. */
  readonly #running = new Set<() => Promise<void>>();

  constructor(options: RunOptions) {
    this.#options = options;
  }

  /** Runs one case; rejects with what failed, the rule, its section and the adapters' stderr. */
  async runCase(conformanceCase: ConformanceCase): Promise<void> {
    const timeoutMs = this.#options.caseTimeoutMs ?? DEFAULT_CASE_TIMEOUT_MS;
    const deadline = Date.now() + timeoutMs;
    const cleanups: Array<() => unknown> = [];
    const adapters: AdapterProcess[] = [];
    const prefix = `${randomBytes(3).toString("hex")}.${conformanceCase.name}`;
    const ctx: CaseContext = {
      key: (name) => `${prefix}.${name}`,
      client: async (servers) => {
        const label = `#${++this.#instances}`;
        const adapter = await AdapterProcess.start(this.#options.command, label, servers);
        adapters.push(adapter);
        return adapter;
      },
      single: () => {
        this.#single ??= LockdProcess.start();
        return this.#single;
      },
      lockd: async (args) => {
        const lockd = await LockdProcess.start({ args });
        cleanups.push(() => lockd.dispose());
        return lockd;
      },
      cluster: async (args = []) => {
        // One machine, one clock: no skew to allow for, so a fresh node serves up to 1 s sooner.
        const cluster = await LockdCluster.start({ nodes: 3, args: ["--max-clock-skew", "0", ...args] });
        cleanups.push(() => cluster.dispose());
        const timeout = { since: 0, timeoutMs: Math.max(1, deadline - Date.now()) };
        await cluster.nodes[0]!.waitForServing(timeout);
        for (const standby of cluster.nodes.slice(1))
          await standby.waitForFollowing(cluster.advertised(0), timeout);
        return cluster;
      },
      defer: (cleanup) => cleanups.push(cleanup),
      until: async (what, condition) => {
        while (!(await condition())) {
          if (Date.now() > deadline) throw new Error(`gave up waiting until ${what}`);
          await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        }
      },
    };
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new Error(`the case did not finish within ${timeoutMs} ms: the client under test hangs`)),
        timeoutMs,
      );
    });
    let stopped: Promise<void> | undefined;
    // Adapters first (they may hold connections to what the cleanups stop), then the cleanups, the
    // last registered first; one that fails does not keep the others from running.
    const stop = (): Promise<void> => {
      stopped ??= (async () => {
        await Promise.all(adapters.map((adapter) => adapter.kill()));
        for (const cleanup of cleanups.reverse())
          await Promise.resolve()
            .then(cleanup)
            .catch(() => {});
      })();
      return stopped;
    };
    this.#running.add(stop);
    try {
      await Promise.race([conformanceCase.run(ctx), hung]);
      // Closing is part of the adapter protocol: every instance must close cleanly.
      await Promise.race([Promise.all(adapters.map((adapter) => adapter.close())), hung]);
    } catch (error) {
      throw explain(error, conformanceCase, adapters);
    } finally {
      clearTimeout(timer);
      await stop();
      this.#running.delete(stop);
    }
  }

  /** Stops everything: the shared node, and what cases still running started (an interrupt). */
  async dispose(): Promise<void> {
    await Promise.all([...this.#running].map((stop) => stop()));
    await (await this.#single?.catch(() => undefined))?.dispose();
  }
}

/** The failure, with the rule it broke, where the rule is written, and what the adapters logged. */
function explain(
  error: unknown,
  conformanceCase: ConformanceCase,
  adapters: readonly AdapterProcess[],
): Error {
  const message = error instanceof Error ? error.message : String(error);
  const logs = adapters
    .filter((adapter) => adapter.stderr.length > 0)
    .map((adapter) => `stderr of adapter ${adapter.label}:\n${adapter.stderr.join("").slice(-4000)}`);
  const explained = new Error(
    [
      `${conformanceCase.name}: ${message}`,
      `rule: ${conformanceCase.rule}`,
      `see ${PROTOCOL_DOC}${conformanceCase.section}`,
      ...logs,
    ].join("\n"),
    { cause: error },
  );
  return explained;
}
