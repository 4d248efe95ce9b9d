/**
 * The chat PEG builder: the generic PEG builder plus the semantic tags the mapper reads and the
 * chat-specific combinators of llama.cpp's `common_chat_peg_builder`.
 *
 * Tag helpers that must never show half a value (ids, names, markers) are atomic: while their text
 * is incomplete they produce no AST node, so a stream never shows a partial tool name.
 */
import { PegBuilder, type PegParser } from "../../peg/builder.js";
import type { PegArena } from "../../peg/arena.js";
import { MAX_PERMUTE, TAG } from "../tags.js";

/** A parser, or a string meaning that literal. */
export type ChatPegInput = PegParser | string;

export class ChatPegBuilder extends PegBuilder {
  #rulePrefix = "";

  /**
   * Builds `fn`'s nodes with every rule name (definitions and references) prefixed, so that two
   * output trees can share one arena without their rules clashing. `prefix`: [a-zA-Z0-9-] only.
   */
  withRulePrefix<T>(prefix: string, fn: () => T): T {
    const outer = this.#rulePrefix;
    this.#rulePrefix = prefix;
    try {
      return fn();
    } finally {
      this.#rulePrefix = outer;
    }
  }

  #scoped(name: string): string {
    return this.#rulePrefix === "" || name.startsWith(this.#rulePrefix) ? name : this.#rulePrefix + name;
  }

  override rule(name: string, p: Parameters<PegBuilder["rule"]>[1], trigger = false): PegParser {
    return super.rule(this.#scoped(name), p, trigger);
  }

  override ref(name: string): PegParser {
    return super.ref(this.#scoped(name));
  }

  /** A string becomes a literal; a parser is returned as is. */
  lit(p: ChatPegInput): PegParser {
    return typeof p === "string" ? this.literal(p) : p;
  }

  /** Sequence where strings are literals.  S -> A B C */
  seq(...parts: ChatPegInput[]): PegParser {
    return this.sequence(parts.map((p) => this.lit(p)));
  }

  /** Ordered choice where strings are literals.  S -> A | B | C */
  alt(...parts: ChatPegInput[]): PegParser {
    return this.choice(parts.map((p) => this.lit(p)));
  }

  /** A reasoning block, markers included (structure only; the text is in `reasoning`). */
  reasoningBlock(p: ChatPegInput): PegParser {
    return this.tag(TAG.REASONING_BLOCK, this.lit(p));
  }

  /** Text that goes to `reasoning_content`. */
  reasoning(p: ChatPegInput): PegParser {
    return this.tag(TAG.REASONING, this.lit(p));
  }

  /** Text that goes to `content`. */
  content(p: ChatPegInput): PegParser {
    return this.tag(TAG.CONTENT, this.lit(p));
  }

  /** One tool call (structure). */
  tool(p: ChatPegInput): PegParser {
    return this.tag(TAG.TOOL, this.lit(p));
  }

  /** The opening of a call: starts a new pending call in the mapper. */
  toolOpen(p: ChatPegInput): PegParser {
    return this.atomic(this.tag(TAG.TOOL_OPEN, this.lit(p)));
  }

  /** The end of a call: closes a dangling quote and unbalanced braces of its arguments. */
  toolClose(p: ChatPegInput): PegParser {
    return this.atomic(this.tag(TAG.TOOL_CLOSE, this.lit(p)));
  }

  /** The model's id for the call (surrounding quotes are removed by the mapper). */
  toolId(p: ChatPegInput): PegParser {
    return this.atomic(this.tag(TAG.TOOL_ID, this.lit(p)));
  }

  /** The function name; makes the call visible. */
  toolName(p: ChatPegInput): PegParser {
    return this.atomic(this.tag(TAG.TOOL_NAME, this.lit(p)));
  }

  /** The arguments: a JSON object taken whole, or the container of tagged arguments. */
  toolArgs(p: ChatPegInput): PegParser {
    return this.tag(TAG.TOOL_ARGS, this.lit(p));
  }

  /** One tagged argument (structure). */
  toolArg(p: ChatPegInput): PegParser {
    return this.tag(TAG.TOOL_ARG, this.lit(p));
  }

  toolArgOpen(p: ChatPegInput): PegParser {
    return this.atomic(this.tag(TAG.TOOL_ARG_OPEN, this.lit(p)));
  }

  /** The end of a tagged argument: closes a string value's quote. */
  toolArgClose(p: ChatPegInput): PegParser {
    return this.atomic(this.tag(TAG.TOOL_ARG_CLOSE, this.lit(p)));
  }

  /** An argument name; quoted as a JSON key by the mapper. */
  toolArgName(p: ChatPegInput): PegParser {
    return this.atomic(this.tag(TAG.TOOL_ARG_NAME, this.lit(p)));
  }

  /** An argument value written as JSON (or Python) text. */
  toolArgValue(p: ChatPegInput): PegParser {
    return this.tag(TAG.TOOL_ARG_VALUE, this.lit(p));
  }

  /** An argument value the schema declares a string: raw text, quoted and escaped by the mapper. */
  toolArgStringValue(p: ChatPegInput): PegParser {
    return this.tag(TAG.TOOL_ARG_STRING_VALUE, this.lit(p));
  }

  /** Same as `toolArgValue` (the name says the text is JSON). */
  toolArgJsonValue(p: ChatPegInput): PegParser {
    return this.tag(TAG.TOOL_ARG_VALUE, this.lit(p));
  }

  /**
   * Structured parts `p` mixed with content: wherever `p` does not match, text up to the next
   * `marker` (at least one character) is content, so a stray marker-like text cannot derail the parse.
   *   S -> (P | tagName)*    tagName -> !marker . (!marker .)*
   */
  tagWithSafeContent(tagName: string, marker: string, p: ChatPegInput): PegParser {
    const structured = this.lit(p);
    if (marker === "") {
      return this.zeroOrMore(this.choice([structured, this.rule(tagName, this.content(this.any()))]));
    }
    const chunk = this.rule(tagName, this.content(this.sequence([this.negate(this.literal(marker)), this.any(), this.until(marker)])));
    return this.zeroOrMore(this.choice([structured, chunk]));
  }

  /**
   * Every parser exactly once, in any order (one rule per remaining set, named
   * `${rulePrefix}-${bitmask}`). Beyond MAX_PERMUTE (6) parsers, or for one, a plain sequence.
   *   S -> A B | B A   (for two)
   */
  permute(rulePrefix: string, parsers: readonly ChatPegInput[]): PegParser {
    if (parsers.length === 0) return this.eps();
    const ps = parsers.map((p) => this.lit(p));
    if (ps.length === 1 || ps.length > MAX_PERMUTE) return this.sequence(ps);
    const rules = new Map<number, PegParser>();
    const remainingOf = (remaining: number): PegParser => {
      if (remaining === 0) return this.eps();
      const cached = rules.get(remaining);
      if (cached !== undefined) return cached;
      let alternatives = this.choice([]);
      for (let i = 0; i < ps.length; i++) {
        const bit = 1 << i;
        if (remaining & bit) alternatives = alternatives.or(ps[i]!.then(remainingOf(remaining & ~bit)));
      }
      const r = this.rule(`${rulePrefix}-${remaining}`, alternatives);
      rules.set(remaining, r);
      return r;
    };
    return remainingOf((1 << ps.length) - 1);
  }

  /**
   * A marker whose leading and trailing whitespace characters are each optional (models often add
   * or drop a newline around tags).  "\n<tag>\n" -> "\n"? "<tag>" "\n"?
   */
  optspace(marker: string): PegParser {
    const isWs = (c: string) => c === " " || c === "\t" || c === "\n" || c === "\v" || c === "\f" || c === "\r";
    let lead = marker.length;
    for (let i = 0; i < marker.length; i++) {
      if (!isWs(marker[i]!)) {
        lead = i;
        break;
      }
    }
    let trail = marker.length;
    for (let i = marker.length; i > 0; i--) {
      if (!isWs(marker[i - 1]!)) {
        trail = i;
        break;
      }
    }
    let parser = this.eps();
    for (let i = 0; i < lead; i++) parser = parser.then(this.optional(this.literal(marker[i]!)));
    parser = parser.then(this.literal(marker.slice(lead, trail)));
    for (let i = trail; i < marker.length; i++) parser = parser.then(this.optional(this.literal(marker[i]!)));
    return parser;
  }
}

/** A fresh chat builder. */
export function chatPegBuilder(): ChatPegBuilder {
  return new ChatPegBuilder();
}

/** Builds a chat arena: `fn` returns the root parser (the reference's `build_chat_peg_parser`). */
export function buildChatPegParser(fn: (p: ChatPegBuilder) => PegParser): PegArena {
  const b = new ChatPegBuilder();
  b.setRoot(fn(b));
  return b.build();
}
