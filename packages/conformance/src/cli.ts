import { parseArgs } from "node:util";
import { buildLockd } from "@lock/testkit";
import { CASES, ConformanceRun } from "./suite.js";

/**
 * `node packages/conformance/dist/cli.js [--case <name>]... -- <adapter command>`: runs the suite
 * (or the named cases) against the client the adapter command starts, one line per case, and exits 1
 * if any case failed. `--list` prints the cases and the rules they check.
 */
const USAGE = "usage: node dist/cli.js [--case <name>]... [--list] -- <adapter command> [args...]";

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: {
      case: { type: "string", multiple: true },
      list: { type: "boolean" },
      help: { type: "boolean" },
    },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (values.list) {
    for (const { name, rule, section } of CASES)
      console.log(`${name}\n  ${rule}\n  docs/protocol.md${section}`);
    return 0;
  }
  const unknown = (values.case ?? []).filter((name) => !CASES.some((c) => c.name === name));
  if (positionals.length === 0 || unknown.length > 0) {
    console.error(unknown.length > 0 ? `unknown case(s): ${unknown.join(", ")}` : USAGE);
    return 2;
  }
  const selected = values.case ? CASES.filter((c) => values.case!.includes(c.name)) : CASES;
  // The cases start real lockd processes from apps/lockd/dist: bring it up to date (a no-op if it is).
  buildLockd();
  const run = new ConformanceRun({ command: positionals });
  // lockd and adapter processes outlive a runner that exits without stopping them.
  const interrupted = (signal: NodeJS.Signals) => {
    console.error(`${signal}: stopping lockd and the adapters`);
    run.dispose().finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted).once("SIGTERM", interrupted);
  let failed = 0;
  try {
    for (const conformanceCase of selected) {
      const started = performance.now();
      try {
        await run.runCase(conformanceCase);
        console.log(`ok      ${conformanceCase.name} (${Math.round(performance.now() - started)} ms)`);
      } catch (error) {
        failed += 1;
        console.log(
          `FAILED  ${conformanceCase.name}\n${indent(error instanceof Error ? error.message : String(error))}`,
        );
      }
    }
  } finally {
    await run.dispose();
  }
  console.log(`${selected.length - failed} passed, ${failed} failed`);
  return failed > 0 ? 1 : 0;
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((line) => `        ${line}`)
    .join("\n");
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
