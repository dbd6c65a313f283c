import { readFileSync } from "node:fs";
import ts from "typescript";

/**
 * The first fenced code block (```js or ```ts) after the heading that starts with `heading` in the
 * Markdown file at `path`, as JavaScript a plain Node runs: TypeScript blocks have their types
 * stripped (transpiled to ES2022 modules, nothing else changed).
 */
export function exampleAfter(path: string, heading: string): string {
  const lines = readFileSync(path, "utf8").split("\n");
  const start = lines.findIndex((line) => /^#+ /.test(line) && line.replace(/^#+ /, "").startsWith(heading));
  if (start < 0) throw new Error(`${path}: no heading "${heading}"`);
  const open = lines.findIndex((line, i) => i > start && /^```(js|ts)$/.test(line));
  if (open < 0) throw new Error(`${path}: no js or ts block after "${heading}"`);
  const close = lines.findIndex((line, i) => i > open && line === "```");
  const code = lines.slice(open + 1, close).join("\n");
  if (lines[open] === "```js") return code;
  return ts.transpileModule(code, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText;
}
