import { describe, expect, it } from "vitest";
import { configOver } from "./config.test.support.js";
import { builtInFamily, KeyFamilies, OTHER_FAMILY, parseFamilyRules } from "./key-families.js";

describe("key families", () => {
  it("cuts a key at its first ':' (kept) or digit by default; a key with neither is its own family", () => {
    expect(builtInFamily("orders:42")).toBe("orders:*");
    expect(builtInFamily("orders:eu:42")).toBe("orders:*");
    expect(builtInFamily("job-1234")).toBe("job-*");
    expect(builtInFamily("user7:cart")).toBe("user*");
    expect(builtInFamily("42")).toBe("*");
    expect(builtInFamily("leader")).toBe("leader");
  });

  it("parses NAME=REGEX rules, tries them in order and falls back to the built-in family", () => {
    const rules = parseFamilyRules("orders:*=^orders:,tenant=^tenant:[^:]+:,any-a=a=b");
    if ("error" in rules) throw new Error(rules.error);
    expect(rules.map((rule) => [rule.name, rule.pattern.source])).toEqual([
      ["orders:*", "^orders:"],
      ["tenant", "^tenant:[^:]+:"],
      ["any-a", "a=b"],
    ]);
    const families = new KeyFamilies(rules);
    expect(families.labelOf("orders:7")).toBe("orders:*");
    expect(families.labelOf("tenant:acme:job:1")).toBe("tenant");
    expect(families.labelOf("xa=by")).toBe("any-a");
    expect(families.labelOf("carts:9")).toBe("carts:*");
  });

  it("refuses a rule without a name or regex, and a regex that does not compile", () => {
    expect(parseFamilyRules("orders")).toEqual({ error: expect.stringContaining("NAME=REGEX") });
    expect(parseFamilyRules("=^x")).toEqual({ error: expect.stringContaining("NAME=REGEX") });
    expect(parseFamilyRules("a=^x,b=")).toEqual({ error: expect.stringContaining("NAME=REGEX") });
    expect(parseFamilyRules("a=(")).toEqual({ error: expect.stringContaining("not a regular expression") });
  });

  it("numbers at most `limit` families and puts every later one in 'other', for good", () => {
    const families = new KeyFamilies([], 2);
    expect(families.labelOf("a:1")).toBe("a:*");
    expect(families.labelOf("b:1")).toBe("b:*");
    expect(families.labelOf("c:1")).toBe(OTHER_FAMILY);
    expect(families.labelOf("a:2")).toBe("a:*");
    expect(families.labelOf("c:2")).toBe(OTHER_FAMILY);
    expect(families.names).toEqual([OTHER_FAMILY, "a:*", "b:*"]);
  });

  it("gives each key its own built-in family when many families' keys interleave (past the recent ones)", () => {
    const families = new KeyFamilies([], 100);
    const names = Array.from({ length: 20 }, (_, i) => `f${String.fromCharCode(97 + i)}`);
    for (let round = 0; round < 3; round++)
      for (const name of names) expect(families.labelOf(`${name}:${round}`)).toBe(`${name}:*`);
    expect(families.labelOf("fa-7")).toBe("fa-*");
    // Keys that start with a recent prefix but are cut elsewhere.
    expect(families.labelOf("fa-x7")).toBe("fa-x*");
    expect(families.labelOf("fa-:1")).toBe("fa-:*");
    expect(families.labelOf("7up")).toBe("*");
    expect(families.labelOf("seven")).toBe("seven");
    expect(families.names).toHaveLength(26);
  });

  it("labels every key over a small alphabet by its built-in family, in any order (the recent-prefix path agrees with the scan)", () => {
    const alphabet = ["a", "b", ":", "1", "-"];
    let keys = [""];
    const all: string[] = [];
    for (let length = 1; length <= 4; length++) {
      keys = keys.flatMap((key) => alphabet.map((char) => key + char));
      all.push(...keys);
    }
    // A fixed shuffle, so families' keys interleave and recent prefixes match keys cut elsewhere.
    let seed = 12345;
    for (let i = all.length - 1; i > 0; i--) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const j = seed % (i + 1);
      [all[i], all[j]] = [all[j]!, all[i]!];
    }
    const families = new KeyFamilies([], 10_000);
    for (const key of [...all, ...all]) expect(families.labelOf(key), key).toBe(builtInFamily(key));
  });

  it("runs the rules once per key while the key stays cached, and at most `cacheSize` keys are", () => {
    let tests = 0;
    const counting = /^hot:/;
    const test = counting.test.bind(counting);
    counting.test = (key: string) => {
      tests += 1;
      return test(key);
    };
    const families = new KeyFamilies([{ name: "hot", pattern: counting }], 100, 4);
    for (let i = 0; i < 10; i++) families.numberOf("hot:1");
    expect(tests).toBe(1);
    for (const key of ["k1", "k2", "k3", "k4"]) families.numberOf(key); // fills the cache: emptied
    families.numberOf("hot:1");
    expect(tests).toBe(6);
  });

  it("reads --key-families and --key-family-limit from flags, variables and the config file", () => {
    const { config } = configOver({
      "/etc/lockd.yaml": "key-families: 'orders=^orders:'\nkey-family-limit: 7\n",
    });
    expect(config([])).toMatchObject({ keyFamilies: { rules: [], limit: 100 } });
    const fromFile = config(["--config", "/etc/lockd.yaml"]).keyFamilies!;
    expect([fromFile.limit, fromFile.rules.map((rule) => rule.name)]).toEqual([7, ["orders"]]);
    const fromEnv = config([], { LOCKD_KEY_FAMILIES: "jobs=^job-", LOCKD_KEY_FAMILY_LIMIT: "3" })
      .keyFamilies!;
    expect([fromEnv.limit, fromEnv.rules.map((rule) => rule.name)]).toEqual([3, ["jobs"]]);
    expect(config(["--key-family-limit", "0"]).keyFamilies).toBeUndefined();
    expect(() => config(["--key-families", "a=("])).toThrow(
      /--key-families: "\(" is not a regular expression/,
    );
    expect(() => config(["--key-family-limit", "10001"])).toThrow(
      /--key-family-limit: must be at most 10000/,
    );
  });
});
