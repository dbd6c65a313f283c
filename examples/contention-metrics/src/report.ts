#!/usr/bin/env node
/**
 * `node dist/report.js http://127.0.0.1:9090`: prints lockd's contention by key family, once.
 * Run it under `watch -n 5` for a live view.
 */
import { formatFamilies, scrapeFamilies } from "./families.js";

const adminUrl = process.argv[2] ?? "http://127.0.0.1:9090";
console.log(formatFamilies(await scrapeFamilies(adminUrl)));
