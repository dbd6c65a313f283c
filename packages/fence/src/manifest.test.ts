/**
 * What each public entry point loads at run time, checked against package.json: an import that is
 * neither a dependency nor the optional peer that entry is for fails in a user's app with
 * ERR_MODULE_NOT_FOUND (as `fastify-plugin` once did), or drags a test runner into production code.
 */
import { readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import fencePlugin from "./fastify/plugin.js";

const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), "..");

interface Manifest {
  exports: Record<string, Record<string, string>>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}
const manifest: Manifest = JSON.parse(readFileSync(join(PACKAGE_DIR, "package.json"), "utf8"));

/** The optional peers an entry may load: the driver it adapts, nothing else. */
const PEERS_BY_ENTRY: Record<string, readonly string[]> = {
  ".": [],
  "./postgres": ["pg"],
  "./redis": ["ioredis"],
  "./fastify": ["fastify"],
  "./testing": ["vitest", "fast-check"],
};

/** `pg/lib/x` → `pg`, `@scope/name/x` → `@scope/name`. */
function packageName(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

/**
 * The bare specifiers the emitted JavaScript of `entry` and every module it reaches imports. Each file
 * is transpiled with the package's own `verbatimModuleSyntax`, so type-only imports drop out exactly
 * as they do in dist, and `import { type X }` stays the side-effect import it compiles to.
 */
function runtimeImports(entry: string): Set<string> {
  const external = new Set<string>();
  const seen = new Set<string>();
  const pending = [join(PACKAGE_DIR, entry)];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const { outputText } = ts.transpileModule(readFileSync(file, "utf8"), {
      fileName: file,
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
      },
    });
    const emitted = ts.createSourceFile(file, outputText, ts.ScriptTarget.ES2022);
    for (const statement of emitted.statements) {
      if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue;
      const specifier = statement.moduleSpecifier;
      if (specifier === undefined || !ts.isStringLiteral(specifier)) continue;
      if (specifier.text.startsWith(".")) {
        pending.push(join(dirname(file), specifier.text.replace(/\.js$/, ".ts")));
      } else if (!specifier.text.startsWith("node:") && !builtinModules.includes(specifier.text)) {
        external.add(packageName(specifier.text));
      }
    }
  }
  return external;
}

describe("package.json", () => {
  const dependencies = Object.keys(manifest.dependencies ?? {});

  for (const [entry, conditions] of Object.entries(manifest.exports)) {
    it(`${entry}: loads only dependencies and its own optional peers`, () => {
      const peers = PEERS_BY_ENTRY[entry];
      expect(peers, `add ${entry} to PEERS_BY_ENTRY`).toBeDefined();
      const undeclared = [...runtimeImports(conditions["@lock/source"]!)].filter(
        (name) => !dependencies.includes(name) && !peers!.includes(name),
      );
      expect(undeclared).toEqual([]);
      for (const peer of peers!) {
        expect(manifest.peerDependencies?.[peer], peer).toBeDefined();
        expect(manifest.peerDependenciesMeta?.[peer]?.optional, peer).toBe(true);
      }
    });
  }

  it("pins every dependency exactly", () => {
    const loose = Object.entries(manifest.dependencies ?? {}).filter(
      ([, range]) => !/^\d+\.\d+\.\d+$/.test(range),
    );
    expect(loose).toEqual([]);
  });

  it("accepts the Fastify versions the plugin declares, and no others", () => {
    const declared = (fencePlugin as unknown as Record<symbol, { fastify: string }>)[
      Symbol.for("plugin-meta")
    ];
    expect(manifest.peerDependencies?.fastify).toBe(declared?.fastify);
  });
});
