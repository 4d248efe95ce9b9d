/**
 * Which JSON Schema keywords constrain which instance types. The normalizer uses these tables to
 * find assertion keywords that a chosen translation would leave out: such a keyword is reported
 * (unsupported) unless it cannot matter, i.e. it applies only to types the translation never
 * produces. Keywords in none of these tables are annotations (or unknown) and are accepted.
 */

export type JsonType = "string" | "number" | "integer" | "boolean" | "null" | "array" | "object";

export const JSON_TYPES: ReadonlySet<string> = new Set(["string", "number", "integer", "boolean", "null", "array", "object"]);

const STRING_KEYWORDS = ["minLength", "maxLength", "pattern"];
const NUMBER_KEYWORDS = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"];
const OBJECT_KEYWORDS = [
  "properties",
  "required",
  "additionalProperties",
  "patternProperties",
  "propertyNames",
  "minProperties",
  "maxProperties",
  "dependentRequired",
  "dependentSchemas",
  "dependencies",
  "unevaluatedProperties",
];
const ARRAY_KEYWORDS = [
  "items",
  "prefixItems",
  "additionalItems",
  "minItems",
  "maxItems",
  "uniqueItems",
  "contains",
  "minContains",
  "maxContains",
  "unevaluatedItems",
];
/** Assertions and applicators that constrain every type. */
const GENERIC_KEYWORDS = ["type", "enum", "const", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref", "$dynamicRef", "$recursiveRef"];

const APPLIES_TO = new Map<string, readonly JsonType[] | "all">();
for (const k of STRING_KEYWORDS) APPLIES_TO.set(k, ["string"]);
for (const k of NUMBER_KEYWORDS) APPLIES_TO.set(k, ["number", "integer"]);
for (const k of OBJECT_KEYWORDS) APPLIES_TO.set(k, ["object"]);
for (const k of ARRAY_KEYWORDS) APPLIES_TO.set(k, ["array"]);
for (const k of GENERIC_KEYWORDS) APPLIES_TO.set(k, "all");

/** Every keyword treated as an assertion (anything else is an annotation). */
export const ASSERTION_KEYWORDS: readonly string[] = [...APPLIES_TO.keys()];

/** True when `keyword` can reject an instance of one of `types` (all types when `types` is "all"). */
export function constrains(keyword: string, types: ReadonlySet<JsonType> | "all"): boolean {
  const applies = APPLIES_TO.get(keyword);
  if (applies === undefined) return false;
  if (applies === "all" || types === "all") return true;
  return applies.some((t) => types.has(t) || (t === "number" && types.has("integer")) || (t === "integer" && types.has("number")));
}

/** Keyword values that constrain nothing (`minItems: 0`, `uniqueItems: false`, `required: []`...). */
export function isVacuous(keyword: string, value: unknown): boolean {
  switch (keyword) {
    case "minLength":
    case "minItems":
    case "minProperties":
    case "minContains":
      return value === 0;
    case "uniqueItems":
      return value === false;
    case "additionalProperties":
    case "additionalItems":
    case "unevaluatedProperties":
    case "unevaluatedItems":
    case "items":
    case "propertyNames":
      return value === true || (typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0);
    case "required":
    case "allOf":
      return Array.isArray(value) && value.length === 0;
    case "properties":
    case "patternProperties":
    case "dependentRequired":
    case "dependentSchemas":
    case "dependencies":
      return typeof value === "object" && value !== null && Object.keys(value).length === 0;
    default:
      return false;
  }
}

/** The JSON type of a value, `integer` for integral numbers. */
export function typeOfValue(v: unknown): JsonType {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  switch (typeof v) {
    case "string":
      return "string";
    case "boolean":
      return "boolean";
    case "number":
      return Number.isInteger(v) ? "integer" : "number";
    default:
      return "object";
  }
}

/** Whether a value is an instance of `type`. */
export function valueHasType(v: unknown, type: string): boolean {
  const t = typeOfValue(v);
  return t === type || (type === "number" && t === "integer");
}
