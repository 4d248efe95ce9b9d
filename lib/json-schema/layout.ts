/**
 * JSON whitespace in the default mode's grammars. llama.cpp lets every separator of a JSON value
 * take any whitespace (`space ::= | " " | "\n"{1,2} [ \t]{0,20}`): a model may pad its arguments
 * with newlines and tabs (the random test model does), and no separator is ever forced, so
 * fast-forward (docs/grammar-engine.md, "Forced text") finds nothing to force between a value and
 * the next key. "canonical" writes JSON the way chat templates serialize it (`tojson`, Python's
 * json.dumps): `", "` between items, `": "` after a key, nothing inside brackets; the parser
 * still reads any whitespace. "flexible" is llama.cpp's rule.
 */
export type JsonWhitespace = "canonical" | "flexible";

/**
 * A rule body of the schema compiler with its `space` references laid out canonically: `":"
 * space` becomes `": "`, `"," space` becomes `", "`, and every other `space` goes (after `{` / `[`,
 * before `}` / `]` / `:` / `,`). Token-aware: literals and character classes are copied as they are.
 */
export function canonicalJsonBody(body: string): string {
  // most bodies (key tries, patterns, literals) name no `space` rule: they come out as they are
  if (!SPACE_WORD.test(body)) return body;
  let out = "";
  // the last literal copied to `out` and where it starts, for `":" space` / `"," space`
  let lastLiteral = "";
  let lastLiteralAt = -1;
  let i = 0;
  while (i < body.length) {
    const c = body[i]!;
    if (c === '"' || c === "[") {
      const end = scanDelimited(body, i, c === '"' ? '"' : "]");
      const token = body.slice(i, end);
      lastLiteral = c === '"' ? token : "";
      lastLiteralAt = out.length;
      out += token;
      i = end;
      continue;
    }
    if (isIdentChar(c)) {
      let end = i;
      while (end < body.length && isIdentChar(body[end]!)) end++;
      const word = body.slice(i, end);
      if (word === "space") {
        const trimmed = out.trimEnd();
        if (lastLiteralAt >= 0 && lastLiteralAt + lastLiteral.length === trimmed.length && (lastLiteral === '":"' || lastLiteral === '","')) {
          out = `${trimmed.slice(0, lastLiteralAt)}"${lastLiteral[1]} "`;
          lastLiteral = "";
          lastLiteralAt = -1;
        } else {
          // an empty group or alternative keeps a term
          const before = trimmed.at(-1);
          let j = end;
          while (j < body.length && body[j] === " ") j++;
          const after = body[j];
          const alone = (before === undefined || before === "(" || before === "|") && (after === undefined || after === ")" || after === "|");
          out = alone ? `${out}""` : trimmed;
        }
        i = end;
        continue;
      }
      out += word;
      lastLiteral = "";
      lastLiteralAt = -1;
      i = end;
      continue;
    }
    if (c !== " ") {
      lastLiteral = "";
      lastLiteralAt = -1;
    }
    out += c;
    i++;
  }
  return out;
}

const SPACE_WORD = /(?:^|[^a-zA-Z0-9_-])space(?![a-zA-Z0-9_-])/;

function isIdentChar(c: string): boolean {
  return (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || c === "-" || c === "_";
}

/** The index after the literal or character class that starts at `start` (backslash escapes). */
function scanDelimited(text: string, start: number, close: string): number {
  let i = start + 1;
  while (i < text.length) {
    const c = text[i]!;
    if (c === "\\") i += 2;
    else if (c === close) return i + 1;
    else i++;
  }
  return text.length;
}
