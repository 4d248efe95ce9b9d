/**
 * Small, checked edits of GBNF text produced by `PegArena.toGbnf` (one `name ::= body` rule per line):
 * dropping the generation prompt from the start of `root` (llama.cpp feeds it to the grammar as
 * "prefill" tokens; the native sampler here starts from the output), and joining two grammars as
 * alternatives under one root.
 */
import { LlamapegError } from "../errors.js";

interface Rule {
  name: string;
  body: string;
}

function rules(gbnf: string): Rule[] {
  const out: Rule[] = [];
  for (const line of gbnf.split("\n")) {
    if (line.trim() === "") continue;
    const m = /^([a-zA-Z0-9-]+) ::= (.*)$/.exec(line);
    if (m === null) throw new LlamapegError("ERR_INTERNAL", `unexpected GBNF line: ${JSON.stringify(line.slice(0, 80))}`, { where: "gbnf" });
    out.push({ name: m[1]!, body: m[2]! });
  }
  return out;
}

/** Reads a GBNF string literal starting at `s[at] === '"'`; returns its value and the index after it. */
function readLiteral(s: string, at: number): { value: string; end: number } | null {
  let value = "";
  let i = at + 1;
  while (i < s.length) {
    const c = s[i]!;
    if (c === '"') return { value, end: i + 1 };
    if (c !== "\\") {
      value += c;
      i++;
      continue;
    }
    const e = s[i + 1];
    const simple: Record<string, string> = { n: "\n", r: "\r", t: "\t", "\\": "\\", '"': '"', "[": "[", "]": "]" };
    if (e !== undefined && simple[e] !== undefined) {
      value += simple[e];
      i += 2;
    } else if (e === "x" || e === "u" || e === "U") {
      const len = e === "x" ? 2 : e === "u" ? 4 : 8;
      value += String.fromCodePoint(parseInt(s.slice(i + 2, i + 2 + len), 16));
      i += 2 + len;
    } else return null;
  }
  return null;
}

/**
 * `gbnf` whose root no longer starts with the literal part of `generationPrompt` the prompt already
 * holds. Unchanged when the root does not start with such a literal.
 */
export function dropGenerationPrompt(gbnf: string, generationPrompt: string): string {
  if (generationPrompt === "") return gbnf;
  const lines = gbnf.split("\n");
  const i = lines.findIndex((l) => l.startsWith("root ::= "));
  if (i < 0) return gbnf;
  const body = lines[i]!.slice("root ::= ".length);
  if (!body.startsWith('"')) return gbnf;
  const lit = readLiteral(body, 0);
  if (lit === null || lit.value === "" || !generationPrompt.startsWith(lit.value)) return gbnf;
  const rest = body.slice(lit.end).trim();
  lines[i] = `root ::= ${rest === "" ? '""' : rest}`;
  return lines.join("\n");
}

/** Renames rule references in a body (identifiers outside literals and character classes). */
function renameRefs(body: string, rename: (name: string) => string): string {
  let out = "";
  let i = 0;
  while (i < body.length) {
    const c = body[i]!;
    if (c === '"' || c === "[") {
      const close = c === '"' ? '"' : "]";
      let j = i + 1;
      while (j < body.length && body[j] !== close) j += body[j] === "\\" ? 2 : 1;
      out += body.slice(i, j + 1);
      i = j + 1;
    } else if (/[a-zA-Z0-9-]/.test(c) && !/[0-9]/.test(c)) {
      let j = i;
      while (j < body.length && /[a-zA-Z0-9-]/.test(body[j]!)) j++;
      out += rename(body.slice(i, j));
      i = j;
    } else if (c === "{") {
      // a repetition count like {0,20}
      const j = body.indexOf("}", i);
      out += body.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** One grammar accepting what `a` or `b` accepts (rules prefixed "a-" / "b-" to keep them apart). */
export function alternativeGrammars(a: string, b: string): string {
  const lines = ["root ::= a-root | b-root"];
  for (const [prefix, gbnf] of [["a-", a], ["b-", b]] as const) {
    const rs = rules(gbnf);
    const names = new Set(rs.map((r) => r.name));
    const rename = (n: string): string => (names.has(n) ? prefix + n : n);
    for (const r of rs) lines.push(`${prefix}${r.name} ::= ${renameRefs(r.body, rename)}`);
  }
  return `${lines.join("\n")}\n`;
}
