/**
 * The lexer of @huggingface/jinja (`src/lexer.ts`, with lstrip_blocks + trim_blocks as its
 * `Template` uses them), re-done so that every token knows where it starts in the source: the
 * library's own tokens carry no positions, and error messages must name a line and column.
 * The token list is the library's, token for token (test/unit/jinja/template-lexer.test.ts compares the
 * two over every vendored template and random texts); it goes to the library's parser unchanged.
 *
 * Two departures, both about cost, not output: preprocessing is one linear pass (the library's
 * `generation`-tag regex backtracks quadratically over a long run of whitespace), and text is
 * sliced rather than built a character at a time.
 */
import { TemplateSyntaxError } from "./errors.js";

export type TokenType =
  | "Text"
  | "NumericLiteral"
  | "StringLiteral"
  | "Identifier"
  | "Equals"
  | "OpenParen"
  | "CloseParen"
  | "OpenStatement"
  | "CloseStatement"
  | "OpenExpression"
  | "CloseExpression"
  | "OpenSquareBracket"
  | "CloseSquareBracket"
  | "OpenCurlyBracket"
  | "CloseCurlyBracket"
  | "Comma"
  | "Dot"
  | "Colon"
  | "Pipe"
  | "AdditiveBinaryOperator"
  | "MultiplicativeBinaryOperator"
  | "ExponentiationBinaryOperator"
  | "ComparisonBinaryOperator"
  | "UnaryOperator"
  | "Comment";

/** A token as the library's parser reads it (`value`, `type`), plus where it starts. */
export interface PositionedToken {
  value: string;
  type: TokenType;
  /** Offset of the token's first character in the (line-end normalized) source. */
  start: number;
  /** Index in the token list. */
  index: number;
}

const ORDERED_MAPPING_TABLE: readonly [string, TokenType][] = [
  ["{%", "OpenStatement"],
  ["%}", "CloseStatement"],
  ["{{", "OpenExpression"],
  ["}}", "CloseExpression"],
  ["(", "OpenParen"],
  [")", "CloseParen"],
  ["{", "OpenCurlyBracket"],
  ["}", "CloseCurlyBracket"],
  ["[", "OpenSquareBracket"],
  ["]", "CloseSquareBracket"],
  [",", "Comma"],
  [".", "Dot"],
  [":", "Colon"],
  ["|", "Pipe"],
  ["<=", "ComparisonBinaryOperator"],
  [">=", "ComparisonBinaryOperator"],
  ["==", "ComparisonBinaryOperator"],
  ["!=", "ComparisonBinaryOperator"],
  ["<", "ComparisonBinaryOperator"],
  [">", "ComparisonBinaryOperator"],
  ["+", "AdditiveBinaryOperator"],
  ["-", "AdditiveBinaryOperator"],
  ["~", "AdditiveBinaryOperator"],
  ["**", "ExponentiationBinaryOperator"],
  ["*", "MultiplicativeBinaryOperator"],
  ["//", "MultiplicativeBinaryOperator"],
  ["/", "MultiplicativeBinaryOperator"],
  ["%", "MultiplicativeBinaryOperator"],
  ["=", "Equals"],
];

const ESCAPE_CHARACTERS = new Map([
  ["n", "\n"],
  ["t", "\t"],
  ["r", "\r"],
  ["b", "\b"],
  ["f", "\f"],
  ["v", "\v"],
  ["'", "'"],
  ['"', '"'],
  ["\\", "\\"],
]);

// The library tests single characters with these regexes; `undefined` (past the end) becomes the
// string "undefined", which is a word but neither whitespace nor a digit.
const isWord = (c: string | undefined): boolean => /\w/.test(c as string);
const isInteger = (c: string | undefined): boolean => /[0-9]/.test(c as string);
const isWhitespace = (c: string | undefined): boolean => /\s/.test(c as string);

/** The preprocessed text and, for each of its characters, the offset it came from. */
interface Preprocessed {
  text: string;
  origin: Int32Array;
}

/** Keeps the characters of `src` where `keep` is 1, remembering their offsets. */
function compact(src: string, keep: Uint8Array, origin: Int32Array | null): Preprocessed {
  let n = 0;
  for (let i = 0; i < src.length; i++) n += keep[i]!;
  const out = new Int32Array(n);
  const parts: string[] = [];
  let j = 0;
  let runStart = -1;
  for (let i = 0; i < src.length; i++) {
    if (keep[i]) {
      if (runStart < 0) runStart = i;
      out[j++] = origin ? origin[i]! : i;
    } else if (runStart >= 0) {
      parts.push(src.slice(runStart, i));
      runStart = -1;
    }
  }
  if (runStart >= 0) parts.push(src.slice(runStart));
  return { text: parts.join(""), origin: out };
}

/**
 * The library's `preprocess` with lstrip_blocks and trim_blocks: drop one trailing newline, the
 * spaces/tabs that start a line before `{%`/`{#`/`{-`, the newline after `%}`/`#}`/`-}`, and
 * `{% generation %}` / `{% endgeneration %}` tags (with the whitespace their `-` modifiers strip).
 */
function preprocess(source: string): Preprocessed {
  let src = source.endsWith("\n") ? source.slice(0, -1) : source;
  const keep = new Uint8Array(src.length).fill(1);
  // lstrip_blocks: /^[ \t]*({[#%-])/gm
  for (let lineStart = 0; lineStart <= src.length; ) {
    let i = lineStart;
    while (i < src.length && (src[i] === " " || src[i] === "\t")) i++;
    if (src[i] === "{" && (src[i + 1] === "#" || src[i + 1] === "%" || src[i + 1] === "-")) keep.fill(0, lineStart, i);
    const nl = src.indexOf("\n", lineStart);
    if (nl < 0) break;
    lineStart = nl + 1;
  }
  // trim_blocks: /([#%-]})\n/g (on the text after lstrip, which removed only spaces and tabs)
  for (let i = src.indexOf("}\n"); i >= 0; i = src.indexOf("}\n", i + 1)) {
    let p = i - 1;
    while (p >= 0 && !keep[p]) p--;
    const c = p >= 0 ? src[p] : undefined;
    if (c === "#" || c === "%" || c === "-") keep[i + 1] = 0;
  }
  let pre = compact(src, keep, null);
  src = pre.text;
  // generation tags: /(\s*){%(-?)\s*(?:end)?generation\s*(-?)%}(\s*)/gs, matched left to right
  const tag = /\{%(-?)\s*(?:end)?generation\s*(-?)%\}/y;
  const keep2 = new Uint8Array(src.length).fill(1);
  let any = false;
  let prevEnd = 0;
  for (let i = src.indexOf("{%"); i >= 0; i = src.indexOf("{%", i + 1)) {
    if (i < prevEnd) continue;
    tag.lastIndex = i;
    const m = tag.exec(src);
    if (!m) continue;
    any = true;
    let before = i;
    while (before > prevEnd && isWhitespace(src[before - 1])) before--;
    let after = i + m[0].length;
    while (after < src.length && isWhitespace(src[after])) after++;
    if (m[1]) keep2.fill(0, before, i);
    keep2.fill(0, i, i + m[0].length);
    if (m[2]) keep2.fill(0, i + m[0].length, after);
    prevEnd = after;
  }
  if (any) pre = compact(src, keep2, pre.origin);
  return pre;
}

/**
 * Tokenizes a template (line ends already normalized to LF). Throws TemplateSyntaxError at the
 * offending character, with the library's message.
 */
export function tokenize(source: string): PositionedToken[] {
  const { text: src, origin } = preprocess(source);
  const at = (i: number): number => (i < origin.length ? origin[i]! : source.length);
  const tokens: PositionedToken[] = [];
  const push = (value: string, type: TokenType, start: number): void => {
    tokens.push({ value, type, start: at(start), index: tokens.length });
  };
  const fail = (message: string, pos: number): never => {
    throw new TemplateSyntaxError(message, source, at(pos));
  };

  let cursor = 0;
  let curlyDepth = 0;

  const consumeWhile = (predicate: (c: string | undefined) => boolean): string => {
    let str = "";
    while (predicate(src[cursor])) {
      if (src[cursor] === "\\") {
        ++cursor;
        if (cursor >= src.length) fail("Unexpected end of input", cursor);
        const escaped = src[cursor++]!;
        if (escaped === "x" || escaped === "u") {
          const length = escaped === "x" ? 2 : 4;
          const hex = src.slice(cursor, cursor + length);
          if (hex.length !== length || /[^0-9a-f]/i.test(hex)) fail(`Invalid hexadecimal escape sequence: \\${escaped}${hex}`, cursor - 2);
          str += String.fromCharCode(parseInt(hex, 16));
          cursor += length;
          continue;
        }
        const unescaped = ESCAPE_CHARACTERS.get(escaped);
        if (unescaped === undefined) fail(`Unexpected escaped character: ${escaped}`, cursor - 2);
        str += unescaped;
        continue;
      }
      str += src[cursor++];
      if (cursor >= src.length) fail("Unexpected end of input", cursor);
    }
    return str;
  };

  const stripTrailingWhitespace = (): void => {
    const last = tokens.at(-1);
    if (last && last.type === "Text") {
      last.value = last.value.trimEnd();
      if (last.value === "") tokens.pop();
    }
  };

  const skipLeadingWhitespace = (): void => {
    while (cursor < src.length && isWhitespace(src[cursor])) ++cursor;
  };

  main: while (cursor < src.length) {
    const lastType = tokens.at(-1)?.type;
    if (lastType === undefined || lastType === "CloseStatement" || lastType === "CloseExpression" || lastType === "Comment") {
      const start = cursor;
      while (cursor < src.length && !(src[cursor] === "{" && (src[cursor + 1] === "%" || src[cursor + 1] === "{" || src[cursor + 1] === "#"))) {
        // jump to the next '{' (the only character that can end a text run)
        const next = src.indexOf("{", cursor + 1);
        cursor = next < 0 ? src.length : next;
      }
      if (cursor > start) {
        push(src.slice(start, cursor), "Text", start);
        continue;
      }
    }

    if (src[cursor] === "{" && src[cursor + 1] === "#") {
      const start = cursor;
      cursor += 2;
      const stripBefore = src[cursor] === "-";
      if (stripBefore) ++cursor;
      const bodyStart = cursor;
      while (src[cursor] !== "#" || src[cursor + 1] !== "}") {
        if (cursor + 2 >= src.length) fail("Missing end of comment tag", start);
        cursor++;
      }
      let comment = src.slice(bodyStart, cursor);
      const stripAfter = comment.endsWith("-");
      if (stripAfter) comment = comment.slice(0, -1);
      if (stripBefore) stripTrailingWhitespace();
      push(comment, "Comment", start);
      cursor += 2;
      if (stripAfter) skipLeadingWhitespace();
      continue;
    }

    if (src.startsWith("{%-", cursor)) {
      stripTrailingWhitespace();
      push("{%", "OpenStatement", cursor);
      cursor += 3;
      continue;
    }
    if (src.startsWith("{{-", cursor)) {
      stripTrailingWhitespace();
      push("{{", "OpenExpression", cursor);
      curlyDepth = 0;
      cursor += 3;
      continue;
    }

    consumeWhile(isWhitespace);

    if (src.startsWith("-%}", cursor)) {
      push("%}", "CloseStatement", cursor);
      cursor += 3;
      skipLeadingWhitespace();
      continue;
    }
    if (src.startsWith("-}}", cursor)) {
      push("}}", "CloseExpression", cursor);
      cursor += 3;
      skipLeadingWhitespace();
      continue;
    }

    const char = src[cursor];

    if (char === "-" || char === "+") {
      const lastType = tokens.at(-1)?.type;
      if (lastType === "Text" || lastType === undefined) fail(`Unexpected character: ${char}`, cursor);
      switch (lastType) {
        case "Identifier":
        case "NumericLiteral":
        case "StringLiteral":
        case "CloseParen":
        case "CloseSquareBracket":
          break;
        default: {
          const start = cursor;
          ++cursor;
          let num = consumeWhile(isInteger);
          if (num.length > 0 && src[cursor] === "." && isInteger(src[cursor + 1])) {
            ++cursor;
            num = `${num}.${consumeWhile(isInteger)}`;
          }
          push(`${char}${num}`, num.length > 0 ? "NumericLiteral" : "UnaryOperator", start);
          continue;
        }
      }
    }

    for (const [seq, type] of ORDERED_MAPPING_TABLE) {
      if (seq === "}}" && curlyDepth > 0) continue;
      if (src.startsWith(seq, cursor)) {
        push(seq, type, cursor);
        if (type === "OpenExpression") curlyDepth = 0;
        else if (type === "OpenCurlyBracket") ++curlyDepth;
        else if (type === "CloseCurlyBracket") --curlyDepth;
        cursor += seq.length;
        continue main;
      }
    }

    if (char === "'" || char === '"') {
      const start = cursor;
      ++cursor;
      const str = consumeWhile((c) => c !== char);
      push(str, "StringLiteral", start);
      ++cursor;
      continue;
    }

    if (isInteger(char)) {
      const start = cursor;
      let num = consumeWhile(isInteger);
      if (tokens.at(-1)?.type !== "Dot" && src[cursor] === "." && isInteger(src[cursor + 1])) {
        ++cursor;
        num = `${num}.${consumeWhile(isInteger)}`;
      }
      push(num, "NumericLiteral", start);
      continue;
    }
    if (isWord(char)) {
      const start = cursor;
      push(consumeWhile(isWord), "Identifier", start);
      continue;
    }

    fail(`Unexpected character: ${char}`, cursor);
  }
  return tokens;
}
