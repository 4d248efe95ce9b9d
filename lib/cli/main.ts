#!/usr/bin/env node
/** The `llamapeg` executable: runs the program and sets the exit status (see program.ts). */
import { main, reportError } from "./program.js";

main(process.argv.slice(2)).catch((e: unknown) => {
  process.exitCode = reportError(e);
});
