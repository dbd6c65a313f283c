import { readFileSync } from "node:fs";
import ts from "typescript";

/**
 * The first fenced code block in `languages` after the heading that starts with `heading` in the
 * Markdown file at `path`: its language and its text.
 */
export function blockAfter(
  path: string,
  heading: string,
  languages: readonly string[] = ["js", "ts"],
): { language: string; source: string } {
  const lines = readFileSync(path, "utf8").split("\n");
  const start = lines.findIndex((line) => /^#+ /.test(line) && line.replace(/^#+ /, "").startsWith(heading));
  if (start < 0) throw new Error(`${path}: no heading "${heading}"`);
  const fence = new RegExp(`^\`\`\`(${languages.join("|")})$`);
  const open = lines.findIndex((line, i) => i > start && fence.test(line));
  if (open < 0) throw new Error(`${path}: no ${languages.join(" or ")} block after "${heading}"`);
  const close = lines.findIndex((line, i) => i > open && line === "```");
  return { language: lines[open]!.slice(3), source: lines.slice(open + 1, close).join("\n") };
}

/**
 * The first fenced code block (```js or ```ts) after the heading that starts with `heading` in the
 * Markdown file at `path`, as JavaScript a plain Node runs: TypeScript blocks have their types
 * stripped (transpiled to ES2022 modules, nothing else changed).
 */
export function exampleAfter(path: string, heading: string): string {
  const { language, source } = blockAfter(path, heading);
  if (language === "js") return source;
  return ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText;
}

/**
 * What an example says it prints: one entry per `console.log(…)` line of `source`, in order, the
 * comment at the end of the line as a pattern of the whole printed line (`...` stands for any text),
 * or undefined where the line has no comment.
 */
export function documentedOutput(source: string): Array<RegExp | undefined> {
  return source
    .split("\n")
    .filter((line) => /^\s*console\.log\(/.test(line))
    .map((line) => {
      const comment = /\);\s*\/\/ (.+)$/.exec(line)?.[1];
      if (comment === undefined) return undefined;
      const pattern = comment
        .split("...")
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
        .join(".*");
      return new RegExp(`^${pattern}$`);
    });
}

export interface DocumentedInstall {
  readonly name: string;
  /** Installed with `--save-dev` / `-D`. */
  readonly dev: boolean;
}

/**
 * The packages the first ```sh block after `heading` installs: every `npm install` command in it
 * (several may share a line, joined by `&&`; `#` starts a comment), flags left out.
 */
export function documentedInstalls(path: string, heading: string): DocumentedInstall[] {
  return blockAfter(path, heading, ["sh"])
    .source.split("\n")
    .map((line) => line.replace(/#.*$/, ""))
    .flatMap((line) => line.split("&&"))
    .map((command) => command.trim().split(/\s+/))
    .filter((words) => words[0] === "npm" && (words[1] === "install" || words[1] === "i"))
    .flatMap((words) => {
      const flags = words.slice(2).filter((word) => word.startsWith("-"));
      const dev = flags.some((flag) => flag === "--save-dev" || flag === "-D");
      return words
        .slice(2)
        .filter((word) => !word.startsWith("-"))
        .map((name) => ({ name, dev }));
    });
}
