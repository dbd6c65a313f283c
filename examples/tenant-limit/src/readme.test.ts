/**
 * The README shows the recipe's files character for character, so what it shows is what `tsc -b`
 * type-checks and the tests run (worker-main.ts is type-checked only: it is a process's entry point).
 */
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";

const FILES = {
  "## The recipe: `src/tenant-limit.ts`": ["tenant-limit.ts"],
  "## A worker: `src/report-worker.ts`": ["report-worker.ts", "worker-main.ts"],
};

/** The ```ts blocks of the section under `heading`, up to the next heading of its level. */
function tsBlocks(readme: string, heading: string): string[] {
  const start = readme.indexOf(`\n${heading}\n`);
  const end = readme.indexOf("\n## ", start + heading.length);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/\n```ts\n([\s\S]*?\n)```\n/g)].map((match) => match[1]!);
}

describe("README", () => {
  for (const [heading, files] of Object.entries(FILES)) {
    it(`shows ${files.join(" and ")} under ${JSON.stringify(heading)}`, async () => {
      const readme = await readFile(new URL("../README.md", import.meta.url), "utf8");
      expect(readme).toContain(`\n${heading}\n`);
      const sources = await Promise.all(
        files.map((file) => readFile(new URL(file, import.meta.url), "utf8")),
      );
      expect(tsBlocks(readme, heading)).toEqual(sources);
    });
  }
});
