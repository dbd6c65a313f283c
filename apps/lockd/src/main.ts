#!/usr/bin/env node
console.log("lockd: not yet implemented");
