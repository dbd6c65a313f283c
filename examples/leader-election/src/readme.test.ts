/** The README shows the recipe character for character, so what it shows is what is type-checked and tested. */
import { readFile } from "node:fs/promises";
import { expect, it } from "vitest";

/** The TypeScript blocks of the README section under `heading`. */
async function blocksUnder(heading: string): Promise<string[]> {
  const readme = await readFile(new URL("../README.md", import.meta.url), "utf8");
  const start = readme.indexOf(`\n${heading}\n`);
  expect(start).toBeGreaterThanOrEqual(0);
  const section = readme.slice(start, readme.indexOf("\n## ", start + 1));
  return [...section.matchAll(/\n```ts\n([\s\S]*?\n)```\n/g)].map((match) => match[1] ?? "");
}

it("the README's recipe section is src/leader.ts", async () => {
  expect(await blocksUnder("## The recipe: `src/leader.ts`")).toEqual([
    await readFile(new URL("leader.ts", import.meta.url), "utf8"),
  ]);
});

it("the README's follower section starts with src/follow.ts", async () => {
  const [source] = await blocksUnder("## Who leads: `src/follow.ts`");
  expect(source).toBe(await readFile(new URL("follow.ts", import.meta.url), "utf8"));
});
