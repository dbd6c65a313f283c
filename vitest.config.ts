import { defineConfig } from "vitest/config";

// CI sets LOCK_TEST_REPORT to a path to get a JSON report beside the usual output (.ci/run reads it
// for its `N passed, N failed` line); `pnpm test` stays the same command either way.
const jsonReport = process.env.LOCK_TEST_REPORT;

export default defineConfig({
  test: {
    projects: ["packages/*", "apps/*", "examples/*", "bench"],
    // Suites start real lockd processes from apps/lockd/dist: build it once before any test.
    globalSetup: ["packages/testkit/src/global-setup.ts"],
    reporters: jsonReport ? ["default", ["json", { outputFile: jsonReport }]] : ["default"],
  },
});
