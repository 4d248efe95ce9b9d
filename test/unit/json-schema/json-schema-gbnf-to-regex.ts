/**
 * Test helper: turn a small non-recursive GBNF grammar (literals, character classes, groups,
 * alternation, quantifiers, rule references) into one anchored JS RegExp, so tests can check what
 * a generated grammar accepts. Not a general GBNF implementation: recursive rules throw.
 */

const escapeRegex = (s: string): string => s.replace(/[\\^$.*+?()[\]{}|]/g, (c) => `\\${c}`);

function parseRules(gbnf: string): Map<string, string> {
  const rules = new Map<string, string>();
  for (const line of gbnf.split("\n")) {
    const m = /^([a-zA-Z0-9-]+) ::= (.*)$/.exec(line);
    if (m) rules.set(m[1]!, m[2]!);
  }
  return rules;
}

/** Read an escape at `body[i]` (a backslash); returns [code point, next index]. */
function readEscape(body: string, i: number): [number, number] {
  const c = body[i + 1]!;
  const hex = c === "x" ? 2 : c === "u" ? 4 : c === "U" ? 8 : 0;
  if (hex > 0) return [parseInt(body.slice(i + 2, i + 2 + hex), 16), i + 2 + hex];
  const simple: Record<string, string> = { n: "\n", r: "\r", t: "\t" };
  return [(simple[c] ?? c).codePointAt(0)!, i + 2];
}

const cp = (n: number): string => `\\u{${n.toString(16)}}`;

export function gbnfToRegExp(gbnf: string, root = "root"): RegExp {
  const rules = parseRules(gbnf);
  const active = new Set<string>();
  const expand = (name: string): string => {
    const body = rules.get(name);
    if (body === undefined) throw new Error(`no rule ${name}`);
    if (active.has(name)) throw new Error(`recursive rule ${name}`);
    active.add(name);
    const out = translate(body);
    active.delete(name);
    return `(?:${out})`;
  };
  const translate = (body: string): string => {
    let out = "";
    let i = 0;
    while (i < body.length) {
      const c = body[i]!;
      if (c === " ") {
        i++;
      } else if (c === '"') {
        i++;
        let lit = "";
        while (body[i] !== '"') {
          if (body[i] === "\\") {
            const [code, next] = readEscape(body, i);
            lit += String.fromCodePoint(code);
            i = next;
          } else {
            const ch = String.fromCodePoint(body.codePointAt(i)!);
            lit += ch;
            i += ch.length;
          }
        }
        i++;
        out += `(?:${escapeRegex(lit)})`;
      } else if (c === "[") {
        i++;
        let cls = "[";
        if (body[i] === "^") {
          cls += "^";
          i++;
        }
        while (body[i] !== "]") {
          if (body[i] === "\\") {
            const [code, next] = readEscape(body, i);
            cls += cp(code);
            i = next;
          } else if (body[i] === "-") {
            cls += "-";
            i++;
          } else {
            const code = body.codePointAt(i)!;
            cls += cp(code);
            i += String.fromCodePoint(code).length;
          }
        }
        i++;
        out += `${cls}]`;
      } else if (c === "(" || c === ")" || c === "|" || c === "*" || c === "+" || c === "?") {
        out += c === "(" ? "(?:" : c;
        i++;
      } else if (c === "{") {
        const end = body.indexOf("}", i);
        out += body.slice(i, end + 1);
        i = end + 1;
      } else {
        const m = /^[a-zA-Z0-9-]+/.exec(body.slice(i))!;
        out += expand(m[0]);
        i += m[0].length;
      }
    }
    return out;
  };
  return new RegExp(`^${expand(root)}$`, "u");
}
