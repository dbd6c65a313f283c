/**
 * README examples that are files of this package, character for character: `tsc -b` type-checks them
 * with the rest of the package, and tests run them (the contract example is a test file itself; the
 * Fastify one runs in fastify/readme-example.test.ts, the read-rule and permits ones in
 * readme-examples.test.ts).
 */
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";

const EXAMPLES = {
  "## The read rule: `fenceRead()`": "testing/readme/read-rule.ts",
  "## Semaphore permits: one resource per slot": "testing/readme/permits.ts",
  "## Fastify: `@lock/fence/fastify`": "testing/readme/fastify.ts",
  "### Testing a store: `@lock/fence/testing`": "testing/readme/contract.test.ts",
};

/** The first ```ts block after `heading` in README.md. */
function firstTsBlock(readme: string, heading: string): string {
  const section = readme.slice(readme.indexOf(`\n${heading}\n`));
  const start = section.indexOf("\n```ts\n") + "\n```ts\n".length;
  return section.slice(start, section.indexOf("\n```\n", start) + 1);
}

describe("README", () => {
  for (const [heading, file] of Object.entries(EXAMPLES)) {
    it(`shows ${file} under ${JSON.stringify(heading)}`, async () => {
      const readme = await readFile(new URL("../README.md", import.meta.url), "utf8");
      expect(readme).toContain(`\n${heading}\n`);
      expect(firstTsBlock(readme, heading)).toBe(await readFile(new URL(file, import.meta.url), "utf8"));
    });
  }
});
