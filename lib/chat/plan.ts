/**
 * What applying a chat template yields, and what the session needs to parse the model's output.
 * `parser` and `grammar` come from one PEG tree: the tree parses, its GBNF export constrains sampling.
 */
import type { PegParseOptions, PegParseResult } from "../peg/parse.js";
import type { GrammarTrigger } from "../llama/triggers.js";
import type { PromptTextSegment } from "./prompt.js";

/** Parses one input (a `PegArena`, or the incremental parser it hands out). */
export interface ChatInputParser {
  parse(input: string | Uint8Array, options?: PegParseOptions): PegParseResult;
  /** Parses the previous input followed by `piece` (a `PegStreamParser`: no re-check of the previous input). */
  extend?(piece: Uint8Array, options?: PegParseOptions): PegParseResult;
}

/** The part of a PEG arena the chat layer uses (a `PegArena` satisfies it). */
export interface ChatParser extends ChatInputParser {
  /**
   * A parser for a growing input that reuses the work of the previous parse (same results as
   * `parse`). The session uses it while streaming when the arena offers it.
   */
  streamParser?(): ChatInputParser;
}

/** Defined beside the one mapping of triggers onto a vocabulary (lib/llama/triggers.ts). */
export type { GrammarTrigger };

export interface ChatPlan {
  /** The rendered prompt. */
  prompt: string;
  /**
   * Which stretches of `prompt` are message text (content, tool results, tool descriptions,
   * history): tokenize them without special-token parsing (`tokenizeChatPrompt`). Absent: the
   * prompt was not rendered from messages (all template text).
   */
  promptSegments?: PromptTextSegment[];
  /** Which output format the parser implements (for diagnostics; e.g. "peg-native", "content-only"). */
  format: string;
  /**
   * The sampler's grammar (GBNF, laziness, triggers, prefill) in the one shape every target takes;
   * null when generation is not constrained.
   */
  grammar: SamplingGrammar | null;
  /** Token texts the sampler must keep whole (template markers). */
  preservedTokens: string[];
  additionalStops: string[];
  /** The end of the prompt that the output continues (e.g. "<think>"); prepended before parsing. */
  generationPrompt: string;
  thinkingStartTag: string;
  thinkingEndTags: string[];
  /**
   * tool_choice "required": an output without a tool call is a failure. Otherwise a finished output
   * that ends cleanly where the format allows more (a plain answer where calls could follow) is an
   * answer. Default false.
   */
  toolCallsRequired?: boolean;
  /**
   * Made with `reference_mode`: a finished output's cut call keeps its arguments as they stand (not
   * JSON), as llama.cpp's; otherwise they are closed and reported (cut-calls.ts). Default false.
   */
  referenceMode?: boolean;
  /** Parses the output; `null` means plain content (everything is `content`). */
  parser: ChatParser | null;
}

/** A plan's grammar as the sampler takes it (the local and remote targets alike). */
export interface SamplingGrammar {
  gbnf: string;
  /** Apply `gbnf` only once a trigger appears in the output. */
  lazy: boolean;
  /**
   * What wakes a lazy grammar: words, patterns (`pattern_full` anchored), tokens by text. Read only
   * when `lazy`; a chat plan lists them as llama.cpp does, for eager grammars too.
   */
  triggers: GrammarTrigger[];
  /**
   * Text the grammar consumes before the first sampled token (eager grammars; "" for none): the
   * generation prompt, which the prompt already ends with. llama.cpp's prefill
   * (`common_sampler_init`; llama-server: `generation_prompt` with `grammar_type: "tool_calls"`).
   */
  prefill: string;
}

/** A plan with defaults for every field but the parser (tests and hand-built grammars). */
export function chatPlan(parser: ChatParser | null, fields: Partial<Omit<ChatPlan, "parser">> = {}): ChatPlan {
  return {
    prompt: "",
    format: parser === null ? "content-only" : "peg",
    grammar: null,
    preservedTokens: [],
    additionalStops: [],
    generationPrompt: "",
    thinkingStartTag: "",
    thinkingEndTags: [],
    ...fields,
    parser,
  };
}
