import { defineConfig, mergeConfig } from "vitest/config";
import shared from "../vitest.shared.ts";

// Not one of the root `pnpm test` projects: packing and installing take a while, so CI runs these
// once (`pnpm test:release`), not once per Node version. LOCK_TEST_REPORT: as in ../vitest.config.ts.
const jsonReport = process.env.LOCK_TEST_REPORT;

export default mergeConfig(
  shared,
  defineConfig({
    test: {
      // Everything is built first: the tarballs carry dist/, and the scratch app runs a real lockd.
      globalSetup: ["src/global-setup.ts"],
      testTimeout: 120_000,
      hookTimeout: 120_000,
      reporters: jsonReport ? ["default", ["json", { outputFile: jsonReport }]] : ["default"],
    },
  }),
);
