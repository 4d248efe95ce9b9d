/**
 * A Jinja engine at parity with llama.cpp's (`common/jinja/`): parsing, rendering under budgets,
 * marks on the characters that came from input values, capability probing. It knows nothing of
 * chat requests: lib/chat/apply/ prepares a request's variables. See docs/templates.md.
 */
export { compileTemplate, templateHash, type CompiledTemplate } from "./compile.js";
export { renderTemplate, renderTemplateMarked, type RenderOptions } from "./render.js";
export { templateCaps, preserveReasoningVars, type TemplateCaps } from "./caps.js";
export { DEFAULT_TEMPLATE_LIMITS, resolveLimits, type TemplateLimits, type TemplateUsage } from "./limits.js";
export { sliceMarks, type Marks } from "./marks.js";
export { parseJsonText } from "./json-text.js";
export { cloneData } from "./plain-copy.js";
export { strftime } from "./strftime.js";
