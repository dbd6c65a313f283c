/** The README shows the recipe character for character, so what it shows is what is type-checked and tested. */
import { readFile } from "node:fs/promises";
import { expect, it } from "vitest";

it("the README's recipe section is src/transfer.ts", async () => {
  const readme = await readFile(new URL("../README.md", import.meta.url), "utf8");
  const heading = "\n## The recipe: `src/transfer.ts`\n";
  const section = readme.slice(readme.indexOf(heading), readme.indexOf("\n## ", readme.indexOf(heading) + 1));
  const blocks = [...section.matchAll(/\n```ts\n([\s\S]*?\n)```\n/g)].map((match) => match[1]);
  expect(blocks).toEqual([await readFile(new URL("transfer.ts", import.meta.url), "utf8")]);
});
