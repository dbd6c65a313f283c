import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ERROR_CODES } from "./messages.js";

const protocolDoc = readFileSync(new URL("../../../docs/protocol.md", import.meta.url), "utf8");

describe("docs/protocol.md", () => {
  it("documents every error code the protocol defines", () => {
    const undocumented = Object.keys(ERROR_CODES).filter((code) => !protocolDoc.includes(`| \`${code}\` |`));
    expect(undocumented).toEqual([]);
  });

  it("documents every request verb", () => {
    for (const verb of ["A", "Y", "R", "X", "C", "P", "H", "I", "B"])
      expect(protocolDoc).toContain(`| \`${verb} `);
  });
});
