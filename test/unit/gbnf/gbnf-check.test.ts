// checkGbnf: what llama.cpp's grammar parser rejects or chokes on is ERR_GRAMMAR_INVALID naming
// the rule and the line and column, found in TypeScript before native code runs.
// (test/conformance/gbnf-check.test.ts compares the verdicts with llama.cpp's own parser.)
import { describe, expect, it } from "vitest";

import { LlamapegError } from "../../../lib/errors.js";
import { MAX_CHAIN, MAX_NESTING, checkGbnf } from "../../../lib/gbnf/index.js";

function reject(gbnf: string, root?: string): LlamapegError {
  try {
    checkGbnf(gbnf, root ? { root } : {});
  } catch (e) {
    expect(e).toBeInstanceOf(LlamapegError);
    expect((e as LlamapegError).code).toBe("ERR_GRAMMAR_INVALID");
    return e as LlamapegError;
  }
  throw new Error(`accepted: ${gbnf.slice(0, 80)}`);
}

const chain = (n: number): string => Array.from({ length: n }, (_, i) => `r${i} ::= r${i + 1}\n`).join("") + `r${n} ::= "a"\nroot ::= r0\n`;

describe("checkGbnf", () => {
  it("finds a root among the synthesized rules, as llama.cpp's symbol table does (they are named lazily)", () => {
    // "x"{0,3} in rule start makes start_1..start_3 (llama.cpp's generate_symbol_id names them so)
    expect(checkGbnf('start ::= "x"{0,3}\n', { root: "start_2" }).rules).toBe(4);
    expect(reject('start ::= "x"{0,3}\n', "start_4").message).toMatch(/does not contain a 'start_4' symbol/);
    expect(reject('start ::= "x"{0,3}\n', "other_2").message).toMatch(/does not contain a 'other_2' symbol/);
    // a synthesized rule's name still shows in errors
    expect(reject('start ::= ("x" undefined-rule){0,2}\n').message).toMatch(/Undefined rule identifier 'undefined-rule'/);
  });

  it("accepts ordinary grammars and reports their size", () => {
    const s = checkGbnf('root ::= "{" ws item ("," ws item)* "}"\nitem ::= [a-z]+ | "\\"" [^"]* "\\""\nws ::= [ \\t\\n]*\n');
    expect(s.rules).toBeGreaterThan(3);
    expect(s.elements).toBeGreaterThan(10);
    expect(s.chain).toBeGreaterThanOrEqual(1);
    expect(checkGbnf("start ::= \"x\"{0,1999}\n", { root: "start" }).rules).toBe(2000);
  });

  it("counts llama.cpp's elements for repetitions (a chain's rules are counted together)", () => {
    // x{0,3}: root (END, the chain's last rule) 2; rules `x |` 3, `x x'(k-1) |` 4 + 4
    expect(checkGbnf('root ::= "x"{0,3}\n')).toEqual({ rules: 4, elements: 13, chain: 2, fanout: 3 });
    expect(checkGbnf('root ::= "x"*\n')).toEqual({ rules: 2, elements: 6, chain: 2, fanout: 3 });
    expect(checkGbnf('root ::= ("ab" [0-9]){2,5} "c"+\n')).toEqual({ rules: 6, elements: 26, chain: 2, fanout: 2 });
  });

  const cases: [string, string, RegExp, string][] = [
    ["min greater than max (llama.cpp's count underflows)", 'root ::= "a"{5,2}\n', /minimum is greater/, "line 1, column 13"],
    ["a count over 2000", 'root ::= "a"{2001}\n', /limit of 2000/, "line 1, column 13"],
    ["a huge count", 'root ::= [a-z]{99999999999999999999}\n', /limit of 2000/, "line 1, column 15"],
    ["chained repetitions multiplying past 2000", 'root ::= "a"{50}{50}\n', /exceeds llama.cpp's limit/, "line 1, column 17"],
    ["{0,2000}: 2000 generated rules reach the limit", 'root ::= "a"{0,2000}\n', /exceeds llama.cpp's limit/, "line 1, column 13"],
    ["an undefined rule", 'root ::= "a" missing\n', /Undefined rule identifier 'missing'/, "line 1, column 14"],
    ["no root", 'start ::= "a"\n', /does not contain a 'root' symbol/, "line 1, column 1"],
    ["direct left recursion", 'root ::= root "a" | "b"\n', /left recursion: root -> root/, "line 1, column 1"],
    ["left recursion through an empty-capable rule", 'root ::= e root "a" | "b"\ne ::= "x" |\n', /left recursion/, "line 1, column 1"],
    ["indirect left recursion", 'root ::= a\na ::= b "x"\nb ::= a | "y"\n', /left recursion: a -> b -> a/, "line 2, column 1"],
    ["a syntax error", 'root ::= "a" |\n  "b" )\n', /expecting newline or end/, "line 2, column 7"],
    ["an unterminated literal", 'root ::= "abc\n', /unexpected end of input/, "line 2, column 1"],
    ["a bad escape", 'root ::= "\\q"\n', /unknown escape/, "line 1, column 11"],
    ["missing ::=", "root = \"a\"\n", /expecting ::=/, "line 1, column 6"],
    ["a repetition with nothing before it", "root ::= *\n", /preceding item/, "line 1, column 10"],
  ];
  for (const [name, gbnf, message, where] of cases) {
    it(`${name}: ERR_GRAMMAR_INVALID at ${where}`, () => {
      const e = reject(gbnf);
      expect(e.message).toMatch(message);
      expect(e.where).toContain(where);
    });
  }

  it(`groups nested deeper than ${MAX_NESTING} (20k nested groups crash llama.cpp's recursive parser)`, () => {
    const e = reject(`root ::= ${"(".repeat(20_000)}"a"${")".repeat(20_000)}\n`);
    expect(e.message).toContain(`deeper than ${MAX_NESTING}`);
    expect(() => checkGbnf(`root ::= ${"(".repeat(MAX_NESTING)}"a"${")".repeat(MAX_NESTING)}\n`)).not.toThrow();
  });

  it(`chains of leftmost references longer than ${MAX_CHAIN} (70k chained rules overflow llama.cpp's recursion)`, () => {
    expect(checkGbnf(chain(MAX_CHAIN - 10)).chain).toBe(MAX_CHAIN - 8);
    const e = reject(chain(70_000));
    expect(e.message).toContain(`exceeds ${MAX_CHAIN}`);
    expect(e.where).toMatch(/rule r\d+/);
  });

  it("a rule that starts more than 10,000 parse stacks (a 100,000-value enum) is rejected", () => {
    const e = reject(`root ::= ${Array.from({ length: 100_000 }, (_, i) => `"v${i}"`).join(" | ")}\n`);
    expect(e.message).toContain("starts 100000 parse stacks");
    expect(checkGbnf(`root ::= ${Array.from({ length: 5000 }, (_, i) => `"v${i}"`).join(" | ")}\n`).fanout).toBe(5000);
    // fan-out adds up through leftmost references and past rules that may be empty (an upper
    // bound: b's empty alternative and the "x" after it count as two)
    expect(checkGbnf('root ::= a | b "x"\na ::= "1" | "2"\nb ::= "3" | \n').fanout).toBe(5);
  });

  it("huge expansions are rejected before llama.cpp allocates them", () => {
    const big = `root ::= "${"x".repeat(100_000)}"{1999}\n`;
    expect(reject(big).message).toMatch(/expands to more than \d+ elements/);
  });

  it("takes milliseconds on the hostile cases (70k rules, 20k groups, 1 MB literal)", () => {
    // not a timing assertion: the cases above run here together; vitest's timeout bounds them
    for (const g of [chain(70_000), `root ::= ${"(".repeat(20_000)}"a"${")".repeat(20_000)}\n`, `root ::= "${"y".repeat(1 << 20)}"\n`]) {
      try {
        checkGbnf(g);
      } catch (e) {
        expect((e as LlamapegError).code).toBe("ERR_GRAMMAR_INVALID");
      }
    }
  });
});
