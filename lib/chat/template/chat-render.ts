/**
 * The chat-level rendering API: an OpenAI-shaped request in, the prompt llama.cpp's
 * `common_chat_templates_apply` would produce out.
 */
import { type ChatRenderRequest, prepareChatContext } from "./chat-context.js";
import { renderTemplate } from "./render.js";

export type { ChatRenderRequest };

/**
 * Renders the prompt for `request` with the chat template `source`. Throws ERR_TEMPLATE_RENDER
 * when the template has a syntax error or raises, ERR_INVALID_REQUEST for malformed messages/tools.
 */
export function renderChatTemplate(source: string, request: ChatRenderRequest): string {
  const prepared = prepareChatContext(source, request);
  const agp = request.add_generation_prompt ?? true;
  const vars = agp ? { ...prepared.variables, add_generation_prompt: true } : prepared.variables;
  // the family's last fix (GPT-OSS ends an inference prompt's last turn with <|end|>)
  return prepared.finishPrompt(prepared.finish(renderTemplate(prepared.source, vars, { now: request.now ?? new Date() })), agp);
}

/**
 * The text the template adds for the assistant turn: the prompt with add_generation_prompt=true
 * minus its longest common prefix with the prompt without it (common_chat_template_generation_prompt).
 */
export function renderGenerationPrompt(source: string, request: ChatRenderRequest): string {
  const prepared = prepareChatContext(source, request);
  const now = request.now ?? new Date();
  const without = prepared.finish(renderTemplate(prepared.source, prepared.variables, { now }));
  const withGp = prepared.finish(renderTemplate(prepared.source, { ...prepared.variables, add_generation_prompt: true }, { now }));
  let i = 0;
  while (i < without.length && i < withGp.length && without[i] === withGp[i]) i++;
  return withGp.slice(i);
}
