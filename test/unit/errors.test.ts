// The error contract: every code the native addon or the TypeScript layer raises is a declared
// LlamapegErrorCode; argument errors keep TypeError/RangeError and carry ERR_INVALID_ARGUMENT.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

import { describe, expect, it } from "vitest";

import { applyChatTemplate } from "../../lib/chat/apply/index.js";
import { checkGbnf } from "../../lib/gbnf/index.js";
import { ArgumentRangeError, ArgumentTypeError, ERROR_CODES, LlamapegError, internalError } from "../../lib/errors.js";
import { int, str } from "../../lib/llama/validate.js";

const ROOT = resolve(import.meta.dirname, "../..");

function files(dir: string, ext: RegExp): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p, ext));
    else if (ext.test(name)) out.push(p);
  }
  return out;
}

function codesIn(paths: string[]): Map<string, string> {
  const found = new Map<string, string>();
  for (const p of paths) for (const m of readFileSync(p, "utf8").matchAll(/"(ERR_[A-Z_]+)"/g)) if (!found.has(m[1]!)) found.set(m[1]!, p);
  return found;
}

describe("error codes", () => {
  it("every code the native addon raises is declared in lib/errors.ts", () => {
    const native = codesIn(files(join(ROOT, "native"), /\.(cpp|h)$/));
    expect(native.size).toBeGreaterThan(5);
    const undeclared = [...native].filter(([c]) => !(ERROR_CODES as readonly string[]).includes(c));
    expect(undeclared, "codes in native/ missing from ERROR_CODES").toEqual([]);
  });

  it("every code named in lib/ is declared", () => {
    // Node's own codes that lib/ reads off errors Node raises (never raised by us).
    const nodeCodes = new Set(["ERR_WORKER_OUT_OF_MEMORY"]);
    const lib = codesIn(files(join(ROOT, "lib"), /\.ts$/));
    const undeclared = [...lib].filter(([c]) => !nodeCodes.has(c) && !(ERROR_CODES as readonly string[]).includes(c));
    expect(undeclared).toEqual([]);
  });

  it("no bare Error, TypeError or RangeError is thrown from lib/", () => {
    // (an AbortController's reason may be a plain Error: it is not thrown at a caller)
    const bare = files(join(ROOT, "lib"), /\.ts$/).filter((p) => /\bthrow new (Error|TypeError|RangeError)\(/.test(readFileSync(p, "utf8")));
    expect(bare.map((p) => p.slice(ROOT.length + 1))).toEqual([]);
  });

  it("argument errors are TypeError / RangeError with ERR_INVALID_ARGUMENT", () => {
    const caught = (f: () => unknown): unknown => {
      try {
        f();
      } catch (e) {
        return e;
      }
      return undefined;
    };
    const t = caught(() => str(5, "path"));
    expect(t).toBeInstanceOf(TypeError);
    expect(t).toBeInstanceOf(ArgumentTypeError);
    expect(t).toMatchObject({ code: "ERR_INVALID_ARGUMENT", name: "TypeError" });
    const r = caught(() => int(99, "threads", 1, 1, 8));
    expect(r).toBeInstanceOf(RangeError);
    expect(r).toBeInstanceOf(ArgumentRangeError);
    expect(r).toMatchObject({ code: "ERR_INVALID_ARGUMENT", message: "threads must be between 1 and 8 (got 99)" });
    expect(caught(() => applyChatTemplate(7 as never, { messages: [] }))).toMatchObject({ code: "ERR_INVALID_ARGUMENT" });
    // and LlamapegError instances (issue 28.9), without making other errors or subclasses match
    expect(t).toBeInstanceOf(LlamapegError);
    expect(r).toBeInstanceOf(LlamapegError);
    expect(new TypeError("x")).not.toBeInstanceOf(LlamapegError);
    expect(new LlamapegError("ERR_BUSY", "x")).toBeInstanceOf(LlamapegError);
    class Sub extends LlamapegError {}
    expect(t).not.toBeInstanceOf(Sub);
    expect(new Sub("ERR_BUSY", "x")).toBeInstanceOf(Sub);
  });

  it("a GBNF code point above U+10FFFF is ERR_GRAMMAR_INVALID naming it (no invalid UTF-8 reaches the sampler)", () => {
    expect(() => checkGbnf("root ::= [\\U00110000]")).toThrow(expect.objectContaining({ code: "ERR_GRAMMAR_INVALID", message: expect.stringMatching(/U00110000 is above U\+10FFFF/) }));
    expect(() => checkGbnf('root ::= "\\UFFFFFFFF"')).toThrow(/above U\+10FFFF/);
    expect(() => checkGbnf("root ::= [\\U00000041-\\U0010FFFF]")).not.toThrow();
  });

  it("internal invariants fail with ERR_INTERNAL", () => {
    const e = internalError("a rule without a body", "rules/x");
    expect(e).toBeInstanceOf(LlamapegError);
    expect(e).toMatchObject({ code: "ERR_INTERNAL", where: "rules/x" });
  });
});
