import { describe, expect, it } from "vitest";
import { linesEnd } from "./line-budget.js";

const bytes = (text: string) => Buffer.from(text, "latin1");

describe("linesEnd", () => {
  it("stops after the allowed number of newlines", () => {
    const input = bytes("P a\nP b\nP c\nP d\n");
    expect(linesEnd(input, 0, 2)).toBe(8);
    expect(linesEnd(input, 8, 1)).toBe(12);
    expect(linesEnd(input, 12, 5)).toBe(16);
  });

  it("takes everything when fewer newlines remain, including an unfinished line", () => {
    const input = bytes("P a\nP b\nP unfinished");
    expect(linesEnd(input, 0, 3)).toBe(input.length);
    expect(linesEnd(input, 4, 1)).toBe(8);
  });

  it("counts blank lines like any other", () => {
    const input = bytes("\n\n\n\nP a\n");
    expect(linesEnd(input, 0, 2)).toBe(2);
  });
});
