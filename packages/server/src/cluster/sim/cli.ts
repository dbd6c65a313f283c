#!/usr/bin/env node
import { randomInt } from "node:crypto";
import { parseArgs } from "node:util";
import { MUTATIONS, type Mutation, type SimResult, simulate } from "./simulator.js";

/**
 * `pnpm sim [--seeds N] [--seed S] [--from F] [--nodes K] [--steps M] [--mutation X] [--coordinated] [--clusters C] [--log]`:
 * runs seeded cluster schedules (simulator.ts) and prints, for each failing seed, the command that
 * replays it and the schedule's faults. Exit 1 if any schedule failed.
 */
const USAGE = `usage: pnpm sim [--seeds N] [--seed S | --from F] [--nodes K] [--steps M] [--clients C]
                [--mutation none|same-node-id|clock-behind|peer-token-mismatch|writer-beside-reader|bundle-key-by-key|fresh-retry-id|lease-overrun|skip-epoch-raise]
                [--coordinated] [--clusters K] [--log]
  --seeds N     schedules to run (default 1000), seeds F, F+1, ...
  --from F      first seed (default: random, printed)
  --seed S      run only seed S (with --log: every role change and grant)
  --nodes K     cluster size (default 3; with --clusters, of each cluster)
  --steps M     faults per schedule (default 8)
  --mutation X  break a token-epoch rule (same-node-id, clock-behind), the peer handshake
                (peer-token-mismatch), the lock modes' rule (writer-beside-reader), bundles
                (bundle-key-by-key: a grant per key, not one for all) or the client
                (fresh-retry-id: retries under a new request id) or the ownership lease (lease-overrun,
                with --coordinated) or slot moves (skip-epoch-raise, with --clusters: a cluster serves
                slots moved to it without a fresh epoch) on purpose: the checker must then fail
  --coordinated a store decides who is active (ownership leases, store epochs), with store faults
  --clusters K  K clusters over one key space and one store (implies --coordinated): a slot map,
                clients that follow S redirects, and slot moves between the clusters (A->B->A too)`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      seeds: { type: "string" },
      seed: { type: "string" },
      from: { type: "string" },
      nodes: { type: "string" },
      steps: { type: "string" },
      clients: { type: "string" },
      mutation: { type: "string" },
      coordinated: { type: "boolean" },
      clusters: { type: "string" },
      log: { type: "boolean" },
      help: { type: "boolean" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const number = (name: string, text: string | undefined, fallback: number) => {
    if (text === undefined) return fallback;
    const value = Number(text);
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`--${name} must be a whole number`);
    return value;
  };
  const nodes = number("nodes", values.nodes, 3);
  const steps = number("steps", values.steps, 8);
  const clients = number("clients", values.clients, 3);
  const mutation = (values.mutation ?? "none") as Mutation;
  if (!MUTATIONS.includes(mutation)) throw new RangeError(`unknown --mutation ${mutation}`);
  const single = values.seed !== undefined;
  const from = single ? number("seed", values.seed, 0) : number("from", values.from, randomInt(1, 2 ** 31));
  const count = single ? 1 : number("seeds", values.seeds, 1_000);
  const clusters = number("clusters", values.clusters, 1);
  const coordinated = values.coordinated === true || clusters > 1;
  const shape = `--nodes ${nodes} --steps ${steps} --clients ${clients}${mutation === "none" ? "" : ` --mutation ${mutation}`}${clusters > 1 ? ` --clusters ${clusters}` : coordinated ? " --coordinated" : ""}`;
  if (!single) console.log(`seeds ${from}..${from + count - 1} (${shape})`);
  const started = performance.now();
  let failed = 0;
  for (let seed = from; seed < from + count; seed++) {
    const result = await simulate({
      seed,
      nodes,
      steps,
      clients,
      mutation,
      coordinated,
      clusters,
      ...(single && values.log ? { log: (line: string) => console.log(line) } : {}),
    });
    if (result.ok) continue;
    failed += 1;
    report(result, shape);
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `${count - failed} of ${count} schedules passed in ${seconds.toFixed(1)} s (${(count / seconds).toFixed(0)} schedules/s)`,
  );
  return failed > 0 ? 1 : 0;
}

function report(result: SimResult, shape: string): void {
  console.log(`\nFAIL seed ${result.seed}: replay with  pnpm sim --seed ${result.seed} ${shape} --log`);
  console.log("  faults:");
  for (const line of result.schedule) console.log(`    ${line}`);
  console.log("  found:");
  for (const failure of result.failures) console.log(`    ${failure}`);
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    console.error(USAGE);
    process.exitCode = 2;
  },
);
