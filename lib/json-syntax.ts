/** Where JSON text stops being JSON: the offset and a short reason, for messages with a position. */

export interface JsonSyntaxError {
  offset: number;
  message: string;
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * The first syntax error of `text` as JSON.parse reads it, or null when it parses. V8's own messages
 * give no position for some errors ("Unexpected token 'x', ... is not valid JSON", with the whole
 * input quoted), so the position comes from this scan.
 */
export function findJsonSyntaxError(text: string): JsonSyntaxError | null {
  let i = 0;
  const fail = (message: string): never => {
    throw { offset: i, message } satisfies JsonSyntaxError;
  };
  const ws = () => {
    while (i < text.length && WS.has(text.charCodeAt(i))) i++;
  };
  const word = (w: string) => {
    for (const ch of w) {
      if (text[i] !== ch) fail(i >= text.length ? "unexpected end of input" : `unexpected ${JSON.stringify(text[i])}`);
      i++;
    }
  };
  const string = () => {
    i++; // opening quote
    for (;;) {
      if (i >= text.length) fail("unterminated string");
      const c = text.charCodeAt(i);
      if (c === 0x22) return void i++;
      if (c < 0x20) fail("control character in string");
      if (c === 0x5c) {
        i++;
        const e = text[i];
        if (e === "u") {
          for (let k = 1; k <= 4; k++) if (!/[0-9a-fA-F]/.test(text[i + k] ?? "")) (i += k), fail("bad \\u escape");
          i += 5;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i++;
        else fail("bad escape");
      } else i++;
    }
  };
  const number = () => {
    if (text[i] === "-") i++;
    if (text[i] === "0") i++;
    else if (/[1-9]/.test(text[i] ?? "")) while (/[0-9]/.test(text[i] ?? "")) i++;
    else fail("bad number");
    if (text[i] === ".") {
      i++;
      if (!/[0-9]/.test(text[i] ?? "")) fail("bad number");
      while (/[0-9]/.test(text[i] ?? "")) i++;
    }
    if (text[i] === "e" || text[i] === "E") {
      i++;
      if (text[i] === "+" || text[i] === "-") i++;
      if (!/[0-9]/.test(text[i] ?? "")) fail("bad number");
      while (/[0-9]/.test(text[i] ?? "")) i++;
    }
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === undefined) fail("unexpected end of input");
    else if (c === "{") {
      i++;
      ws();
      if (text[i] === "}") return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a double-quoted property name");
        string();
        ws();
        if (text[i] !== ":") fail("expected ':' after the property name");
        i++;
        value();
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "}") return void i++;
        else fail("expected ',' or '}'");
      }
    } else if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") return void i++;
      for (;;) {
        value();
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "]") return void i++;
        else fail("expected ',' or ']'");
      }
    } else if (c === '"') string();
    else if (c === "t") word("true");
    else if (c === "f") word("false");
    else if (c === "n") word("null");
    else if (c === "-" || (c >= "0" && c <= "9")) number();
    else fail(`unexpected ${JSON.stringify(c)}`);
  };
  try {
    value();
    ws();
    if (i < text.length) fail("unexpected text after the JSON value");
    return null;
  } catch (e) {
    if (typeof e === "object" && e !== null && "offset" in e) return e as JsonSyntaxError;
    throw e;
  }
}

/** 1-based line and column (in UTF-16 units, as editors count) of `offset`. */
/** Whether `v` is a JSON object: an object that is neither null nor an array. */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export { lineColumn } from "./line-column.js";
