import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

// The developer guide's rule "no function over 80 lines", kept true for the server and lockd:
// a function that grows past it is split by concern, not waved through.
const MAX_LINES = 80;
const root = fileURLToPath(new URL("../../../", import.meta.url));
const trees = ["apps/lockd/src", "packages/server/src"];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter(
      (entry) => entry.isFile() && entry.name.endsWith(".ts") && !/\.test(\.data)?\.ts$/.test(entry.name),
    )
    .map((entry) => join(entry.parentPath, entry.name));
}

function isFunction(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  );
}

function functionName(node: ts.FunctionLikeDeclaration): string {
  if (ts.isConstructorDeclaration(node)) return "constructor";
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (
    ts.isVariableDeclaration(parent) ||
    ts.isPropertyAssignment(parent) ||
    ts.isPropertyDeclaration(parent)
  ) {
    return parent.name.getText();
  }
  return "(anonymous)";
}

/** Every function in `text` longer than MAX_LINES, as "path:line name (N lines)". */
function longFunctions(file: string, text = readFileSync(file, "utf8")): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (isFunction(node) && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > MAX_LINES) {
        found.push(`${relative(root, file)}:${first + 1} ${functionName(node)} (${lines} lines)`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("function length", () => {
  it(`no function in ${trees.join(" or ")} is over ${MAX_LINES} lines (tests aside)`, () => {
    const files = trees.flatMap((tree) => sourceFiles(join(root, tree)));
    expect(files.length).toBeGreaterThan(20);
    expect(files.flatMap((file) => longFunctions(file))).toEqual([]);
  });

  it("counts a function's lines from its first to its last, so one line over the limit is caught", () => {
    const body = (lines: number) => Array.from({ length: lines - 2 }, (_, i) => `  void ${i};`).join("\n");
    const file = join(root, "apps/lockd/src/example.ts");
    const text = (lines: number) =>
      `export function fits() {\n${body(MAX_LINES)}\n}\nclass C {\n  long() {\n${body(lines)}\n  }\n}\n`;
    expect(longFunctions(file, text(MAX_LINES))).toEqual([]);
    expect(longFunctions(file, text(MAX_LINES + 1))).toEqual([
      `apps/lockd/src/example.ts:${MAX_LINES + 2} long (81 lines)`,
    ]);
  });
});
