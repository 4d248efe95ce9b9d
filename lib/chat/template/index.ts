/**
 * Chat template rendering at parity with llama.cpp's Jinja engine and chat layer.
 * See docs/templates.md.
 */
export { compileTemplate, templateHash, type CompiledTemplate } from "./compile.js";
export { renderTemplate, type RenderOptions } from "./render.js";
export { renderChatTemplate, renderGenerationPrompt, type ChatRenderRequest } from "./chat-render.js";
export {
  prepareChatContext,
  detectSpecializedTemplate,
  normalizeMessageContent,
  type PreparedChatContext,
  type SpecializedKind,
} from "./chat-context.js";
export { templateCaps, type TemplateCaps } from "./caps.js";
export { patchTemplateSource } from "./source-patches.js";
