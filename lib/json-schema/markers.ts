/**
 * Symbol keys the default mode's normalizer puts on raw schemas it rewrites, for constraints JSON
 * Schema has no keyword for (symbols: no schema text can collide with them).
 */

/** Keys an object must not have (set by `not`, dependencies and oneOf branches). */
export const FORBIDDEN: unique symbol = Symbol("forbidden keys");
/** Strings a string must not be (a DFA; set by `not`, complement.ts). */
export const EXCLUDED_STRINGS: unique symbol = Symbol("excluded strings");
/** A oneOf of string schemas already decided as one automaton (one-of.ts). */
export const STRING_DFA: unique symbol = Symbol("string automaton");
/** A number that is not an integer (set by `not {type: integer}` beside `number`, complement.ts). */
export const NON_INTEGER: unique symbol = Symbol("non-integer number");
