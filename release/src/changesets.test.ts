import getReleasePlan from "@changesets/get-release-plan";
import { REPO_ROOT } from "@lock/testkit";
import { expect, it } from "vitest";

/** The major part of a semver version: `1` for `1.0.0`, `0` for `0.3.1`. */
const majorOf = (version: string): number => Number(version.split(".")[0]);

/**
 * What `pnpm changeset version` would do with the pending changesets, computed the way the CLI does
 * (every changeset in `.changeset/`, dependents bumped by `updateInternalDependencies`) but without
 * git, so it runs the same on a clone without a `main` branch.
 */
it("no pending changeset takes a package to a new major version", async () => {
  const plan = await getReleasePlan(REPO_ROOT);
  expect(plan.releases.length).toBeGreaterThan(0);
  const newMajors = plan.releases
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
  // Breaking changes before 1.0 are `minor` (0.x semver); going to 1.0.0 is a decision, not an accident.
  expect(newMajors).toEqual([]);
});
