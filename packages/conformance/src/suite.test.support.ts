import { afterAll, describe, it } from "vitest";
import { CASES, ConformanceRun } from "./suite.js";

/**
 * Runs the whole conformance suite against the client the adapter `command` starts: one test per
 * case, named after the rule it checks. The suite's own per-case bound (30 s) fails a hung client
 * first; the test timeout is above it.
 */
export function describeConformance(client: string, command: readonly string[]): void {
  describe(`conformance: ${client}`, () => {
    const run = new ConformanceRun({ command });
    afterAll(() => run.dispose());
    for (const conformanceCase of CASES) {
      it(`${conformanceCase.name}: ${conformanceCase.rule}`, () => run.runCase(conformanceCase), 40_000);
    }
  });
}
