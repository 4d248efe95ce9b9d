/**
 * Translation of a JSON-schema `pattern` into GBNF, for the regex subset llama.cpp's converter
 * understands: anchored `^...$`, literals and escapes GBNF shares (`\n \t \r \\ \" \xHH \uHHHH
 * \UHHHHHHHH`, escaped metacharacters), `.`, character classes, groups `( )` / `(?: )`,
 * alternation, `* + ?` and `{m}`, `{m,}`, `{m,n}`.
 *
 * Two failure kinds, as in the reference: {@link UnsupportedPattern} for a valid regex with no
 * translation here (lookarounds, `\d`, an unanchored pattern, ...) and {@link InvalidPattern} for
 * a pattern that is not a regex at all (unbalanced parentheses, nothing to repeat, ...).
 */
import { buildRepetition, type RuleSet } from "./rules.js";

export class UnsupportedPattern extends Error {}
export class InvalidPattern extends Error {}

const MAX_DEPTH = 100;
/** llama.cpp's MAX_REPETITION_THRESHOLD (src/llama-grammar.cpp). */
export const MAX_REPETITION = 2000;
const INT_MAX = 2147483647;
/** Characters that end a run of literal text. */
const NON_LITERAL = new Set([..."|.()[]{}*+?^$"]);
/** Escaped in a regex, plain in a GBNF literal. */
const REGEX_ONLY_ESCAPES = new Set([..."^$.[]()|{}*+?"]);

/** Length of a GBNF-compatible escape starting at `chars[pos]` (a backslash), 0 if none. */
export function gbnfEscapeLength(chars: readonly string[], pos: number): number {
  if (pos + 1 >= chars.length || chars[pos] !== "\\") return 0;
  const kind = chars[pos + 1]!;
  const hexCount = kind === "x" ? 2 : kind === "u" ? 4 : kind === "U" ? 8 : -1;
  if (hexCount < 0) return "trn\\\"[]".includes(kind) ? 2 : 0;
  if (pos + 2 + hexCount > chars.length) return 0;
  for (let i = pos + 2; i < pos + 2 + hexCount; i++) if (!/^[0-9a-fA-F]$/.test(chars[i]!)) return 0;
  return 2 + hexCount;
}

/** C++ `std::stoi`: leading blanks, a sign, at least one digit, trailing text ignored. */
function stoi(s: string): number {
  const m = /^[ \t\n\r\f\v]*([+-]?\d+)/.exec(s);
  if (m === null) throw new UnsupportedPattern("invalid number in curly brackets");
  const v = Number(m[1]);
  if (v > INT_MAX || v < -INT_MAX - 1) throw new UnsupportedPattern("invalid number in curly brackets");
  return v;
}

interface Piece {
  text: string;
  literal: boolean;
}

const pieceRule = (p: Piece): string => (p.literal ? `"${p.text}"` : p.text);

/**
 * Add the rule for `pattern` under `name` (plus helper rules `dot`, `name-1`, ...) and return the
 * name used. The caller restores `rules` if this throws.
 */
export function patternToRule(pattern: string, name: string, rules: RuleSet, dotall: boolean): string {
  if (pattern.length < 2 || !pattern.startsWith("^") || !pattern.endsWith("$")) {
    throw new UnsupportedPattern("not anchored with '^' and '$'");
  }
  // Code points, not UTF-16 units (nor bytes, as the C++ walks): a quantifier after a non-ASCII
  // character repeats the whole character.
  const src = [...pattern.slice(1, -1)];
  const length = src.length;
  const subRuleIds = new Map<string, string>();
  let i = 0;
  let depth = 0;

  const dot = (): string => rules.add("dot", dotall ? "[\\U00000000-\\U0010FFFF]" : "[^\\x0A\\x0D]");

  /** Join a sequence, merging neighbouring literals into one quoted string. */
  const joinSeq = (seq: Piece[]): string => {
    const parts: string[] = [];
    let literal = "";
    for (const p of seq) {
      if (p.literal) {
        literal += p.text;
        continue;
      }
      if (literal !== "") parts.push(`"${literal}"`);
      literal = "";
      parts.push(p.text);
    }
    if (literal !== "") parts.push(`"${literal}"`);
    return parts.join(" ");
  };

  const readLiteral = (): string => {
    let literal = "";
    while (i < length) {
      const ch = src[i]!;
      if (ch === "\\") {
        if (i === length - 1) throw new InvalidPattern("trailing backslash");
        const next = src[i + 1]!;
        if (REGEX_ONLY_ESCAPES.has(next)) {
          literal += next;
          i += 2;
        } else {
          const n = gbnfEscapeLength(src, i);
          if (n === 0) throw new UnsupportedPattern(`unsupported escape: \\${next}`);
          literal += src.slice(i, i + n).join("");
          i += n;
        }
      } else if (ch === '"') {
        literal += '\\"';
        i++;
      } else if (
        !NON_LITERAL.has(ch) &&
        (i === length - 1 || literal === "" || src[i + 1] === "." || !NON_LITERAL.has(src[i + 1]!))
      ) {
        literal += ch;
        i++;
      } else {
        break;
      }
    }
    return literal;
  };

  const transform = (): string => {
    const seq: Piece[] = [];
    while (i < length) {
      const c = src[i]!;
      if (c === ".") {
        seq.push({ text: dot(), literal: false });
        i++;
      } else if (c === "(") {
        i++;
        if (i < length && src[i] === "?") {
          if (i + 1 < length && src[i + 1] === ":") i += 2;
          else throw new UnsupportedPattern("unsupported group syntax");
        }
        depth++;
        if (depth > MAX_DEPTH) throw new UnsupportedPattern("pattern nesting too deep");
        seq.push({ text: `(${transform()})`, literal: false });
      } else if (c === ")") {
        i++;
        if (depth === 0) throw new InvalidPattern("unbalanced parentheses");
        depth--;
        return joinSeq(seq);
      } else if (c === "^" || c === "$") {
        throw new UnsupportedPattern("anchor inside the pattern");
      } else if (c === "[") {
        let cls = "[";
        i++;
        while (i < length && src[i] !== "]") {
          if (src[i] === "\\") {
            const n = gbnfEscapeLength(src, i);
            if (n === 0) throw new UnsupportedPattern(`unsupported escape in character class: ${src.slice(i, i + 2).join("")}`);
            cls += src.slice(i, i + n).join("");
            i += n;
          } else {
            cls += src[i];
            i++;
          }
        }
        if (i >= length) throw new InvalidPattern("unterminated character class");
        i++;
        seq.push({ text: `${cls}]`, literal: false });
      } else if (c === "|") {
        seq.push({ text: "|", literal: false });
        i++;
      } else if (c === "*" || c === "+" || c === "?") {
        const last = seq.at(-1);
        if (last === undefined) throw new InvalidPattern("nothing to repeat");
        seq[seq.length - 1] = { text: pieceRule(last) + c, literal: false };
        i++;
      } else if (c === "{") {
        i++;
        let body = "";
        while (i < length && src[i] !== "}") body += src[i++];
        if (i >= length) throw new UnsupportedPattern("unterminated curly brackets");
        i++;
        const nums = body.split(",");
        if (nums.length !== 1 && nums.length !== 2) throw new UnsupportedPattern("wrong number of values in curly brackets");
        let min = 0;
        let max = Infinity;
        if (nums.length === 1) {
          min = max = stoi(nums[0]!);
        } else {
          if (nums[0] !== "") min = stoi(nums[0]!);
          if (nums[1] !== "") max = stoi(nums[1]!);
        }
        if (max === INT_MAX) max = Infinity;
        // llama.cpp's grammar parser underflows on min > max and refuses more than 2000 copies
        if (min > max) throw new InvalidPattern(`repetition {${min},${max}}: the minimum is greater than the maximum`);
        if (min > MAX_REPETITION) throw new InvalidPattern(`repetition {${min}${nums.length === 2 ? "," : ""}}: more than ${MAX_REPETITION} copies, the grammar's limit`);
        if (min < 0) throw new InvalidPattern(`repetition {${body}}: a count is negative`);
        const last = seq.at(-1);
        if (last === undefined) throw new InvalidPattern("nothing to repeat");
        let item = last.text;
        if (!last.literal) {
          let id = subRuleIds.get(item);
          if (id === undefined) {
            // the C++ map gets the entry before the rule is named, so the first helper is `-1`
            subRuleIds.set(item, "");
            id = rules.add(`${name}-${subRuleIds.size}`, item);
            subRuleIds.set(item, id);
          }
          item = id;
        }
        seq[seq.length - 1] = { text: buildRepetition(last.literal ? `"${item}"` : item, min, max), literal: false };
      } else {
        const literal = readLiteral();
        if (literal === "") throw new UnsupportedPattern(`unsupported character: ${c}`);
        seq.push({ text: literal, literal: true });
      }
    }
    return joinSeq(seq);
  };

  const body = transform();
  if (depth !== 0) throw new InvalidPattern("unbalanced parentheses");
  return rules.add(name, `"\\"" (${body}) "\\""`);
}
