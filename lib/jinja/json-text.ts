/**
 * JSON text -> template data, keeping what `JSON.parse` loses and the reference keeps: whether a
 * number was written as a float (`1.0` prints as `1.0`, not `1`) and the order of object keys that
 * look like integers (JavaScript objects put those first). Objects come back as `Map`s and floats
 * as `JsonFloat`s; `fromJS` (value.ts) understands both.
 */
import { JsonFloat } from "./value.js";

export class JsonTextError extends Error {
  override name = "JsonTextError";
}

export function parseJsonText(text: string): unknown {
  let i = 0;
  const ws = (): void => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++;
  };
  const fail = (what: string): never => {
    throw new JsonTextError(`${what} at offset ${i}`);
  };
  const value = (): unknown => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const m = new Map<string, unknown>();
      ws();
      if (text[i] === "}") {
        i++;
        return m;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a key");
        const k = string();
        ws();
        if (text[i++] !== ":") fail("expected ':'");
        m.set(k, value());
        ws();
        const d = text[i++];
        if (d === "}") return m;
        if (d !== ",") fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const a: unknown[] = [];
      ws();
      if (text[i] === "]") {
        i++;
        return a;
      }
      for (;;) {
        a.push(value());
        ws();
        const d = text[i++];
        if (d === "]") return a;
        if (d !== ",") fail("expected ',' or ']'");
      }
    }
    if (c === '"') return string();
    for (const [word, v] of [
      ["true", true],
      ["false", false],
      ["null", null],
    ] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    const m = /^-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) return fail("unexpected character");
    i += m[0].length;
    const n = Number(m[0]);
    return m[1] !== undefined || m[2] !== undefined ? new JsonFloat(n) : n;
  };
  const string = (): string => {
    const start = i;
    i++;
    for (;;) {
      const c = text[i];
      if (c === undefined) fail("unterminated string");
      if (c === "\\") i += 2;
      else if (c === '"') break;
      else i++;
    }
    i++;
    try {
      return JSON.parse(text.slice(start, i)) as string;
    } catch {
      return fail("bad string");
    }
  };
  const v = value();
  ws();
  if (i !== text.length) fail("trailing characters");
  return v;
}
