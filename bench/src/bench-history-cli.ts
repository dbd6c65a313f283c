import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { parseHistory } from "./bench-history.js";
import { historyTable, withHistorySection } from "./bench-history-table.js";
import { REPO_ROOT } from "./spawn.js";

/**
 * Prints bench/history.jsonl's last runs as a markdown table (bench-history-table.ts):
 *
 *   pnpm bench:history [--runs N] [--readme]
 *
 * `--readme` writes it into bench/README.md's history section instead.
 */
const { values } = parseArgs({
  options: { runs: { type: "string", default: "5" }, readme: { type: "boolean", default: false } },
});
const historyFile = process.env.BENCH_HISTORY_FILE ?? join(REPO_ROOT, "bench", "history.jsonl");
const history = existsSync(historyFile) ? parseHistory(readFileSync(historyFile, "utf8")) : [];
const table = historyTable(history, Number(values.runs));
if (values.readme) {
  const readmeFile = join(REPO_ROOT, "bench", "README.md");
  writeFileSync(readmeFile, withHistorySection(readFileSync(readmeFile, "utf8"), table));
  console.log(`wrote the last ${Math.min(history.length, Number(values.runs))} runs into ${readmeFile}`);
} else process.stdout.write(table);
