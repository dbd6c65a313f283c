#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { cli } from "./cli.js";

const version: string = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;

process.exitCode = await cli(process.argv.slice(2), {
  env: process.env,
  version,
  stdout: (text) => process.stdout.write(text),
  stderr: (line) => process.stderr.write(`${line}\n`),
  readFile: (path) => readFileSync(path),
});
