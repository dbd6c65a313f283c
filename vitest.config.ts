import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: ["packages/*", "apps/*"],
    // Suites start real lockd processes from apps/lockd/dist: build it once before any test.
    globalSetup: ["packages/testkit/src/global-setup.ts"],
  },
});
