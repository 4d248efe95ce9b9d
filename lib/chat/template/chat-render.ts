/**
 * The chat-level rendering API: an OpenAI-shaped request in, the prompt llama.cpp's
 * `common_chat_templates_apply` would produce out, plus which of its characters are message text.
 */
import { type ChatRenderRequest, prepareChatContext } from "./chat-context.js";
import type { TemplateLimits } from "./limits.js";
import { type Marks, sliceMarks } from "./marks.js";
import { renderTemplate, renderTemplateMarked } from "./render.js";

export type { ChatRenderRequest };

/** The variables whose strings are message values (marked as input in the output). */
const INPUT_VARIABLES = ["messages", "tools", "response_format"];

/** The variables an agent loop sends unchanged turn after turn: converted once, reused while unchanged. */
const REUSABLE_VARIABLES = ["tools"];

/** A rendered chat prompt and the stretches of it that came from message values. */
export interface ChatPrompt {
  prompt: string;
  /** Sorted, disjoint `[start, end)` ranges of `prompt` (UTF-16 code units), flattened. */
  inputMarks: Marks;
}

/**
 * Renders the prompt for `request` with the chat template `source`, marking which characters
 * came from messages and tools. Throws ERR_TEMPLATE_RENDER when the template has a syntax error
 * or raises, ERR_TEMPLATE_LIMIT when it runs past a budget, ERR_INVALID_REQUEST for malformed
 * messages/tools.
 */
export function renderChatPrompt(source: string, request: ChatRenderRequest, limits?: TemplateLimits): ChatPrompt {
  const prepared = prepareChatContext(source, request);
  const agp = request.add_generation_prompt ?? true;
  const vars = agp ? { ...prepared.variables, add_generation_prompt: true } : prepared.variables;
  const out = renderTemplateMarked(prepared.source, vars, {
    now: request.now ?? new Date(),
    inputVariables: INPUT_VARIABLES,
    reusable: REUSABLE_VARIABLES,
    printing: request.reference_mode === true ? "reference" : "python",
    ...(limits ? { limits } : {}),
  });
  const [from, to] = prepared.finishRange(out.text);
  let prompt = out.text.slice(from, to);
  let marks = sliceMarks(out.marks, from, to) ?? [];
  if (prepared.specialized === "gpt-oss" && !agp) {
    // during inference the last turn must end with <|end|>, not the training-time <|return|>
    const at = prompt.lastIndexOf("<|return|>");
    if (at !== -1) {
      const after = at + "<|return|>".length;
      const head = sliceMarks(marks, 0, at) ?? [];
      const tail = (sliceMarks(marks, after, prompt.length) ?? []).map((x) => x + at + "<|end|>".length);
      prompt = prompt.slice(0, at) + "<|end|>" + prompt.slice(after);
      marks = [...head, ...tail];
    }
  }
  return { prompt, inputMarks: marks };
}

/**
 * Renders the prompt for `request` with the chat template `source`. Throws ERR_TEMPLATE_RENDER
 * when the template has a syntax error or raises, ERR_TEMPLATE_LIMIT when it runs past a budget,
 * ERR_INVALID_REQUEST for malformed messages/tools.
 */
export function renderChatTemplate(source: string, request: ChatRenderRequest, limits?: TemplateLimits): string {
  return renderChatPrompt(source, request, limits).prompt;
}

/**
 * The text the template adds for the assistant turn: the prompt with add_generation_prompt=true
 * minus its longest common prefix with the prompt without it (common_chat_template_generation_prompt).
 */
export function renderGenerationPrompt(source: string, request: ChatRenderRequest, limits?: TemplateLimits): string {
  const prepared = prepareChatContext(source, request);
  const options = { now: request.now ?? new Date(), printing: request.reference_mode === true ? ("reference" as const) : ("python" as const), ...(limits ? { limits } : {}) };
  const without = prepared.finish(renderTemplate(prepared.source, prepared.variables, options));
  const withGp = prepared.finish(renderTemplate(prepared.source, { ...prepared.variables, add_generation_prompt: true }, options));
  let i = 0;
  while (i < without.length && i < withGp.length && without[i] === withGp[i]) i++;
  return withGp.slice(i);
}
