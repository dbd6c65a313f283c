import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "@lock/testkit";
import { describe, expect, it } from "vitest";
import { CASES } from "./suite.js";

const README = readFileSync(join(REPO_ROOT, "packages", "conformance", "README.md"), "utf8");
const PROTOCOL = readFileSync(join(REPO_ROOT, "docs", "protocol.md"), "utf8");

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchor(heading: string): string {
  return `#${heading
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, "")
    .replace(/ /g, "-")}`;
}

describe("the conformance cases and their documents", () => {
  const anchors = new Set(
    PROTOCOL.split("\n")
      .filter((line) => /^#{2,3} /.test(line))
      .map((line) => anchor(line.replace(/^#+ /, ""))),
  );

  it("every case links a subsection of docs/protocol.md that exists", () => {
    for (const { name, section } of CASES) expect(anchors, `${name}: ${section}`).toContain(section);
  });

  it("the README lists every case, with the section it checks", () => {
    for (const { name, section } of CASES) {
      const row = README.split("\n").find((line) => line.startsWith(`| \`${name}\` |`));
      expect(row, name).toBeDefined();
      expect(row, name).toContain(`docs/protocol.md${section})`);
    }
  });
});
