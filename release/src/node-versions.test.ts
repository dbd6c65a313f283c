import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "@lock/testkit";
import { describe, expect, inject, it } from "vitest";

/**
 * One answer to "which Node?": the `engines` of every packed package (and of the repository), the
 * Node versions CI runs (.ci/run's NODE_VERSIONS, oldest first, which also runs these checks) and
 * every README line that names them must agree.
 */
const packed = inject("packed");
const root = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
const floor = /^>=(\d+)\.(\d+)\.(\d+)$/.exec(root.engines.node)!.slice(1).map(Number) as [
  number,
  number,
  number,
];
const ciVersions = /^NODE_VERSIONS=\(([^)]*)\)$/m
  .exec(readFileSync(join(REPO_ROOT, ".ci", "run"), "utf8"))![1]!
  .split(" ")
  .map((version) => version.split(".").map(Number) as [number, number, number]);
const ciMajors = ciVersions.map(([major]) => major);
const atLeast = (version: readonly number[], least: readonly number[]): boolean => {
  const differs = version.findIndex((part, i) => part !== least[i]);
  return differs < 0 || version[differs]! > least[differs]!;
};
/** "22, 24 and 26" */
const listed = (majors: number[]) => `${majors.slice(0, -1).join(", ")} and ${majors.at(-1)}`;

const documents = [
  "README.md",
  "docs/operations.md",
  ...["packages", "apps"].flatMap((parent) =>
    readdirSync(join(REPO_ROOT, parent)).map((folder) => `${parent}/${folder}/README.md`),
  ),
];

describe("Node versions", () => {
  it("CI runs supported majors only, oldest first, the oldest within engines and Node 20 (end of life) outside", () => {
    expect(ciMajors).toEqual([...ciMajors].sort((a, b) => a - b));
    expect(ciVersions.every((version) => atLeast(version, floor))).toBe(true);
    expect(ciMajors[0]).toBe(floor[0]);
    expect(atLeast([20, 99, 99], floor)).toBe(false);
  });

  it("gives every packed package the repository's engines, and says so in its README", () => {
    for (const { tarball, name, directory } of packed) {
      const manifest = JSON.parse(
        execFileSync("tar", ["xzf", tarball, "-O", "package/package.json"], { encoding: "utf8" }),
      );
      expect(manifest.engines, name).toEqual({ node: root.engines.node });
      const readme = readFileSync(join(REPO_ROOT, directory, "README.md"), "utf8").replace(/\s+/g, " ");
      expect(readme, name).toContain(
        `Node.js ${floor[0]}.${floor[1]} or later (tested on Node ${listed(ciMajors)})`,
      );
    }
  });

  it.each(documents)("%s names the same floor and the majors CI tests", (document) => {
    const text = readFileSync(join(REPO_ROOT, document), "utf8").replace(/\s+/g, " ");
    for (const [, version] of text.matchAll(/Node(?:\.js)? (\d+\.\d+)(?: or later|\+)/g)) {
      expect(version, document).toBe(`${floor[0]}.${floor[1]}`);
    }
    for (const [, majors] of text.matchAll(/tested on Node ((?:\d+, )*\d+ and \d+)/g)) {
      expect(majors, document).toBe(listed(ciMajors));
    }
  });
});
