/**
 * Reading a JSON file named on the command line: every failure is one line that names the flag, the
 * file and, for a syntax error, the line and column (`--tools t.json:3:14: expected ',' or ']'`).
 */
import { readFileSync } from "node:fs";

import { LlamapegError } from "../errors.js";
import { findJsonSyntaxError, lineColumn } from "../json-syntax.js";

/** Reads and parses `path` (given as `--flag`); a failure is ERR_INVALID_ARGUMENT naming file:line:column. */
export function readJsonFile(path: string, flag: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a directory" : code === "EACCES" ? "permission denied" : (e as Error).message;
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `--${flag} ${path}: ${why}`, { where: path });
  }
  try {
    return JSON.parse(text);
  } catch {
    const err = findJsonSyntaxError(text) ?? { offset: 0, message: "not valid JSON" };
    const { line, column } = lineColumn(text, err.offset);
    throw new LlamapegError("ERR_INVALID_ARGUMENT", `--${flag} ${path}:${line}:${column}: ${err.message}`, { where: `${path}:${line}:${column}` });
  }
}
