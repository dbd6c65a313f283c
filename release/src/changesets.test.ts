import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import getReleasePlan from "@changesets/get-release-plan";
import { REPO_ROOT } from "@lock/testkit";
import { expect, it } from "vitest";

/** The major part of a semver version: `1` for `1.0.0`, `0` for `0.3.1`. */
const majorOf = (version: string): number => Number(version.split(".")[0]);

/**
 * What `pnpm changeset version` would do with the pending changesets in `root`, computed the way the
 * CLI does (every changeset in `.changeset/`, dependents bumped by `updateInternalDependencies`) but
 * without git, so it runs the same on a clone without a `main` branch: the releases that would take
 * a package to a new major version, each with the changesets that ask for it.
 */
async function newMajors(root: string): Promise<string[]> {
  const plan = await getReleasePlan(root);
  return plan.releases
    .filter((release) => majorOf(release.newVersion) !== majorOf(release.oldVersion))
    .map((release) => {
      // Name the changesets that ask for it; none means a dependency range forced it.
      const causes = release.changesets
        .filter((id) =>
          plan.changesets.some(
            (changeset) =>
              changeset.id === id &&
              changeset.releases.some((entry) => entry.name === release.name && entry.type === "major"),
          ),
        )
        .map((id) => `.changeset/${id}.md`);
      return `${release.name} ${release.oldVersion} -> ${release.newVersion} (${release.type}: ${causes.join(", ") || "a dependency range"})`;
    });
}

it("no pending changeset takes a package to a new major version", async () => {
  // Breaking changes before 1.0 are `minor` (0.x semver); going to 1.0.0 is a decision, not an accident.
  expect(await newMajors(REPO_ROOT)).toEqual([]);
});

it("the check names a changeset that would (the workspace's manifests, one `major` changeset added)", async () => {
  const copy = mkdtempSync(join(tmpdir(), "lock-changesets-"));
  try {
    for (const file of ["package.json", "pnpm-workspace.yaml", ".changeset/config.json"])
      cpSync(join(REPO_ROOT, file), join(copy, file));
    for (const parent of ["packages", "apps"])
      for (const name of readdirSync(join(REPO_ROOT, parent))) {
        mkdirSync(join(copy, parent, name), { recursive: true });
        cpSync(join(REPO_ROOT, parent, name, "package.json"), join(copy, parent, name, "package.json"));
      }
    writeFileSync(join(copy, ".changeset", "breaking.md"), '---\n"@lock/protocol": major\n---\n\nBreaks.\n');
    expect(await newMajors(copy)).toContainEqual(
      expect.stringMatching(/^@lock\/protocol 0\.\d+\.\d+ -> 1\.0\.0 \(major: \.changeset\/breaking\.md\)$/),
    );
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
});
