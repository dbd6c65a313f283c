import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { FLAGS } from "./args.js";
import { EXIT_CODES } from "./exit-codes.js";
import { helpText } from "./help.js";

// Every exit status and every flag is documented where users look: README.md and `lock --help`.
const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const help = helpText(undefined);

describe("documentation", () => {
  it.each(Object.entries(EXIT_CODES))(
    "exit status %s is in the README's table and in --help",
    (name, { status, meaning }) => {
      expect(readme).toMatch(new RegExp(`^\\| \`${status}\` \\| \`${name}\` \\| `, "m"));
      expect(help).toContain(`${String(status).padStart(3)}  ${meaning}`);
    },
  );

  it.each(Object.entries(FLAGS))("--%s is in the README and in --help", (name, flag) => {
    expect(readme).toContain(`--${name}`);
    expect(help).toMatch(new RegExp(`^  --${name}\\b`, "m"));
    if (flag.env) {
      expect(readme).toContain(flag.env);
      expect(help).toContain(`[${flag.env}]`);
    }
  });

  it("the README documents LOCK_KEY, LOCK_TOKEN, LOCK_TERM and the inline secrets", () => {
    for (const name of ["LOCK_KEY", "LOCK_TOKEN", "LOCK_TERM", "LOCK_AUTH_TOKEN", "LOCK_ADMIN_TOKEN"])
      expect(readme).toContain(name);
  });
});
