import { defineConfig } from "vitest/config";

// Tests run against each workspace package's TypeScript source (the "@lock/source" export
// condition), so nothing has to be built before `vitest run`.
export default defineConfig({
  ssr: { resolve: { conditions: ["@lock/source"] } },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
