/**
 * Pieces every apply path shares: the prompt and generation prompt renders, and the GBNF export of
 * the plan's parser with the tools' schemas registered first (as chat.cpp's `build_grammar` calls do).
 */
import { LlamapegError } from "../../errors.js";
import type { PegArena } from "../../peg/arena.js";
import { type PromptSegment, segmentsFromMarks } from "../prompt.js";
import type { ChatRenderRequest } from "../template/chat-context.js";
import { renderChatPrompt, renderGenerationPrompt } from "../template/chat-render.js";
import { toolsGbnf } from "../grammar/plan-grammar.js";
import type { GrammarTrigger } from "../plan.js";
import type { NormalizedApplyRequest } from "./request.js";

/** The render request the template layer takes. */
export function renderRequest(req: NormalizedApplyRequest, overrides: Partial<ChatRenderRequest> = {}): ChatRenderRequest {
  return {
    messages: req.messages,
    ...(req.tools !== null ? { tools: req.tools } : {}),
    add_generation_prompt: req.addGenerationPrompt,
    enable_thinking: req.enableThinking,
    ...(req.chatTemplateKwargs !== undefined ? { chat_template_kwargs: req.chatTemplateKwargs } : {}),
    bos_token: req.bosToken,
    eos_token: req.eosToken,
    now: req.now,
    ...(req.jsonSchema !== null ? { json_schema: req.jsonSchema } : {}),
    ...overrides,
  };
}

export interface Prompts {
  prompt: string;
  generationPrompt: string;
  /** The message text in `prompt`. */
  promptSegments: PromptSegment[];
}

/** The renders of the plan being built (see `withPromptSegments`). */
let renders: Prompts[] | null = null;

/** `common_chat_template_direct_apply` and `common_chat_template_generation_prompt`. */
export function renderPrompts(source: string, req: NormalizedApplyRequest, overrides: Partial<ChatRenderRequest> = {}): Prompts {
  const r = renderRequest(req, overrides);
  const chat = renderChatPrompt(source, r, req.templateLimits);
  const out = { prompt: chat.prompt, generationPrompt: renderGenerationPrompt(source, r, req.templateLimits), promptSegments: segmentsFromMarks(chat.inputMarks) };
  renders?.push(out);
  return out;
}

/**
 * Builds a plan and gives it the message segments of its prompt. The handlers build their plan
 * from `renderPrompts` and may append template text to the prompt (a generation prompt); the
 * segments are those of the render the prompt starts with.
 */
export function withPromptSegments<P extends { prompt: string; promptSegments?: PromptSegment[] }>(build: () => P): P {
  const outer = renders;
  renders = [];
  try {
    const plan = build();
    const from = [...renders].reverse().find((p) => plan.prompt.startsWith(p.prompt));
    if (from === undefined) throw new LlamapegError("ERR_INTERNAL", "the plan's prompt is not one it rendered: its message segments are unknown", { where: "applyChatTemplate" });
    plan.promptSegments = from.promptSegments;
    return plan;
  } finally {
    renders = outer;
  }
}

/** The GBNF of `arena` for the request's tools (and its response schema when `withResponseSchema`). */
export function planGrammar(arena: PegArena, req: NormalizedApplyRequest, lazy: boolean, withResponseSchema: boolean): string {
  return toolsGbnf(arena, req.tools ?? [], withResponseSchema ? req.jsonSchema : null, lazy);
}

export const word = (value: string): GrammarTrigger => ({ type: "word", value });
export const pattern = (value: string): GrammarTrigger => ({ type: "pattern", value });
export const patternFull = (value: string): GrammarTrigger => ({ type: "pattern_full", value });

/** C `isspace` trim, as the reference's `trim_whitespace`. */
export function trimWs(s: string): string {
  return s.replace(/^[ \t\n\v\f\r]+/, "").replace(/[ \t\n\v\f\r]+$/, "");
}
