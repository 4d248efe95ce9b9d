/**
 * Chat template rendering at parity with llama.cpp's Jinja engine. See docs/templates.md.
 */
export { compileTemplate, templateHash, type CompiledTemplate } from "./compile.js";
export { renderTemplate, type RenderOptions } from "./render.js";
