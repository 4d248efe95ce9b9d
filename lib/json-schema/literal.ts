/**
 * Text helpers shared by the JSON-schema compiler: GBNF literal quoting, rule-name sanitizing,
 * JSON pointers, and a JSON serializer that writes what llama.cpp's `common_json::dump()` writes
 * (compact, keys in insertion order, doubles in nlohmann's shortest form) so that `const`/`enum`
 * literals come out byte-identical to the reference.
 */

const LITERAL_ESCAPES: Record<string, string> = { "\r": "\\r", "\n": "\\n", '"': '\\"', "\\": "\\\\" };

/** Quote `s` as a GBNF string literal. Only CR, LF, `"` and `\` are escaped, as in the reference. */
export function gbnfFormatLiteral(s: string): string {
  return `"${s.replace(/[\r\n"\\]/g, (c) => LITERAL_ESCAPES[c]!)}"`;
}

/** GBNF rule names are `[a-zA-Z0-9-]+`; every run of other characters becomes one `-`. */
export function sanitizeRuleName(name: string): string {
  return name.replace(/[^a-zA-Z0-9-]+/g, "-");
}

/** Append one reference token to a JSON pointer fragment (`#/a/b`), escaping `~` and `/`. */
export function pointerJoin(where: string, token: string | number): string {
  return `${where}/${String(token).replace(/~/g, "~0").replace(/\//g, "~1")}`;
}

const UINT64_MAX = 18446744073709551615;
const INT64_MIN = -9223372036854775808;

/**
 * Serialize a JSON value like nlohmann::ordered_json::dump(): no whitespace, object keys in
 * insertion order, integers as integers, other numbers in shortest round-trip form with at least
 * one fractional digit (`1.5`, `1e+20`, `1e-05`). A JS number cannot tell `1.0` from `1`; an
 * integral value in the 64-bit range prints as an integer, which is what the reference prints
 * for the same JSON text as `JSON.stringify` writes it.
 */
export function jsonDump(value: unknown): string {
  if (value === null || value === undefined) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "string":
      return JSON.stringify(value);
    case "number":
      return dumpNumber(value);
    case "bigint":
      return value.toString();
    case "object":
      if (Array.isArray(value)) return `[${value.map(jsonDump).join(",")}]`;
      return `{${Object.entries(value as Record<string, unknown>)
        .map(([k, v]) => `${JSON.stringify(k)}:${jsonDump(v)}`)
        .join(",")}}`;
    default:
      return "null";
  }
}

/**
 * Equality of JSON texts without writing them: each value gets a number, equal exactly when
 * jsonDump would write equal text (hash-consing: an object's number comes from its keys and its
 * members' numbers, in order), and the length of that text. Merged schemas share most of their
 * subtrees, and dumping them whole at every merge (to key the shared merged rules) was a third of
 * a large schema's compile. Objects and arrays are remembered by identity: only for values that
 * no longer change (one compile's schemas, once built).
 */
/** A character JSON.stringify writes as an escape (lone surrogates included). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

export class JsonIds {
  private readonly ids = new Map<string, number>();
  private readonly memo = new WeakMap<object, { id: number; length: number }>();
  /**
   * Strings by value: a string's hash is kept in it, so a schema's long descriptions are hashed
   * once, where writing each as JSON text to key it copied and hashed it at every visit.
   */
  private readonly strings = new Map<string, { id: number; length: number }>();
  private next = 0;

  of(value: unknown): { id: number; length: number } {
    if (typeof value === "string") {
      let known = this.strings.get(value);
      if (known === undefined) {
        const length = NEEDS_ESCAPE.test(value) ? JSON.stringify(value).length : value.length + 2;
        known = { id: this.next++, length };
        this.strings.set(value, known);
      }
      return known;
    }
    if (value === null || typeof value !== "object") {
      const text = jsonDump(value);
      return { id: this.intern(`p${text}`), length: text.length };
    }
    const known = this.memo.get(value);
    if (known !== undefined) return known;
    let key: string;
    let length = 2;
    if (Array.isArray(value)) {
      const parts = value.map((v) => {
        const x = this.of(v);
        length += x.length + 1;
        return x.id;
      });
      key = `a${parts.join(",")}`;
    } else {
      const parts = Object.entries(value as Record<string, unknown>).map(([k, v]) => {
        const x = this.of(v);
        const name = JSON.stringify(k);
        length += name.length + 1 + x.length + 1;
        return `${name}:${x.id}`;
      });
      key = `o${parts.join(",")}`;
    }
    const out = { id: this.intern(key), length: Math.max(2, length - 1) };
    this.memo.set(value, out);
    return out;
  }

  private intern(key: string): number {
    let id = this.ids.get(key);
    if (id === undefined) this.ids.set(key, (id = this.next++));
    return id;
  }
}

function dumpNumber(v: number): string {
  if (!Number.isFinite(v)) return "null";
  if (Number.isInteger(v) && v >= INT64_MIN && v <= UINT64_MAX) return BigInt(v).toString();
  // Shortest digits and exponent from JS, laid out the way nlohmann's format_buffer does
  // (decimal notation for exponents in (-4, 15], scientific with a 2+ digit exponent otherwise).
  const neg = v < 0;
  const [mant, expStr] = Math.abs(v).toExponential().split("e") as [string, string];
  const digits = mant.replace(".", "");
  const k = digits.length;
  const n = Number(expStr) + 1; // position of the decimal point relative to the digits
  let out: string;
  if (k <= n && n <= 15) out = `${digits}${"0".repeat(n - k)}.0`;
  else if (0 < n && n <= 15) out = `${digits.slice(0, n)}.${digits.slice(n)}`;
  else if (-4 < n && n <= 0) out = `0.${"0".repeat(-n)}${digits}`;
  else {
    const e = n - 1;
    const ae = Math.abs(e);
    out = `${k === 1 ? digits : `${digits[0]}.${digits.slice(1)}`}e${e < 0 ? "-" : "+"}${ae < 10 ? `0${ae}` : ae}`;
  }
  return neg ? `-${out}` : out;
}
