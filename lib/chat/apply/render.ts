/**
 * The chat-level rendering: a checked request's template input rendered into the prompt
 * llama.cpp's `common_chat_templates_apply` would produce, plus which of its characters are
 * message text; and the generation prompt (`common_chat_template_generation_prompt`) from the
 * two renders it compares. `renderChatTemplate`, the public entry, checks its request with the
 * validator `applyChatTemplate` uses (request.ts).
 */
import { type Marks, type TemplateLimits, renderTemplate, renderTemplateMarked, sliceMarks } from "../../jinja/index.js";
import { LlamapegError } from "../../errors.js";
import { type TemplateFacts, fitContent, templateFacts } from "../template-facts.js";
import { type NormalizedApplyRequest, normalizeApplyRequest } from "./request.js";
import { type TemplateInput, shownTools, templateInput } from "./template-input.js";

/** A render request; field names are OpenAI's / llama.cpp's (the names templates expect). */
export interface ChatRenderRequest {
  /** OpenAI messages (content as a string, parts or null; arguments as JSON text or objects). */
  messages: readonly unknown[];
  /** OpenAI tools (`[{type: "function", function: {name, description?, parameters?}}]`). */
  tools?: readonly unknown[] | null;
  /** Default true, as in llama.cpp. */
  add_generation_prompt?: boolean;
  /** Default true, as in llama.cpp. */
  enable_thinking?: boolean;
  /** Extra template variables (override the defaults above, as in llama.cpp). */
  chat_template_kwargs?: Record<string, unknown>;
  bos_token?: string;
  eos_token?: string;
  /** What `strftime_now`, `datetime` and `date_string` show (local time). Default: now. */
  now?: Date;
  /** A JSON-schema response format; only DeepSeek V4's template prints it. */
  json_schema?: unknown;
  /** The model adds BOS/EOS itself: strip a leading bos_token / trailing eos_token from the prompt. */
  add_bos?: boolean;
  add_eos?: boolean;
  /**
   * llamapeg: true prints floats as llama.cpp's engine does (`%g` in tojson, 6 significant digits)
   * instead of as Python's Jinja (full precision, `1e-09`). Default false. See docs/templates.md.
   */
  reference_mode?: boolean;
}

/** The variables whose strings are message values (marked as input in the output). */
const INPUT_VARIABLES = ["messages", "tools", "response_format"];

/** The variables an agent loop sends unchanged turn after turn: converted once, reused while unchanged. */
const REUSABLE_VARIABLES = ["tools"];

/** Where the model adds BOS/EOS itself, the prompt loses a leading bos_token / trailing eos_token. */
export interface PromptEnds {
  addBos: boolean;
  addEos: boolean;
}

const KEEP_ENDS: PromptEnds = { addBos: false, addEos: false };

/** A rendered chat prompt and the stretches of it that came from message values. */
export interface ChatPrompt {
  prompt: string;
  /** Sorted, disjoint `[start, end)` ranges of `prompt` (UTF-16 code units), flattened. */
  inputMarks: Marks;
  /** The rendered text before the family's changes (`finishPrompt`): what generation prompts compare. */
  rendered: string;
}

/** What `prompt.slice(start, end)` keeps once BOS/EOS the model adds itself are stripped. */
function keptRange(prompt: string, req: NormalizedApplyRequest, ends: PromptEnds): [start: number, end: number] {
  const bos = req.bosToken;
  const eos = req.eosToken;
  const start = ends.addBos && prompt.startsWith(bos) ? bos.length : 0;
  const end = ends.addEos && prompt.endsWith(eos) && prompt.length - eos.length >= start ? prompt.length - eos.length : prompt.length;
  return [start, end];
}

function renderOptions(req: NormalizedApplyRequest) {
  return { now: req.now, printing: req.referenceMode ? ("reference" as const) : ("python" as const), ...(req.templateLimits ? { limits: req.templateLimits } : {}) };
}

function withGenerationPrompt(input: TemplateInput, addGenerationPrompt: boolean): Record<string, unknown> {
  return addGenerationPrompt ? { ...input.variables, add_generation_prompt: true } : input.variables;
}

/**
 * Renders the request's prompt (add_generation_prompt as the request says), marking which
 * characters came from messages and tools. Throws ERR_TEMPLATE_RENDER when the template has a
 * syntax error or raises, ERR_TEMPLATE_LIMIT when it runs past a budget.
 */
export function renderInput(facts: TemplateFacts, input: TemplateInput, req: NormalizedApplyRequest, ends: PromptEnds = KEEP_ENDS): ChatPrompt {
  const agp = req.addGenerationPrompt;
  const out = renderTemplateMarked(facts.source, withGenerationPrompt(input, agp), { ...renderOptions(req), inputVariables: INPUT_VARIABLES, reusable: REUSABLE_VARIABLES });
  const [from, to] = keptRange(out.text, req, ends);
  const rendered = out.text.slice(from, to);
  const marks = sliceMarks(out.marks, from, to) ?? [];
  const finished = facts.family?.finishPrompt?.(rendered, marks, agp) ?? { prompt: rendered, marks };
  return { prompt: finished.prompt, inputMarks: finished.marks, rendered };
}

/**
 * The text the template adds for the assistant turn: the prompt with add_generation_prompt=true
 * minus its longest common prefix with the prompt without it (common_chat_template_generation_prompt).
 * `chat` is the request's own render: the other of the two is rendered here (one render).
 */
export function generationPromptAfter(facts: TemplateFacts, input: TemplateInput, req: NormalizedApplyRequest, chat: ChatPrompt): string {
  const agp = req.addGenerationPrompt;
  const other = renderTemplate(facts.source, withGenerationPrompt(input, !agp), renderOptions(req));
  const otherKept = other.slice(...keptRange(other, req, KEEP_ENDS));
  const withGp = agp ? chat.rendered : otherKept;
  const without = agp ? otherKept : chat.rendered;
  let i = 0;
  while (i < without.length && i < withGp.length && without[i] === withGp[i]) i++;
  return withGp.slice(i);
}

/** A render takes any role (a template may define its own); every other rule is `applyChatTemplate`'s. */
const RENDER_RULES = { anyRole: true };

/** A source-and-request entry's checked request, with the limits argument and BOS/EOS ends. */
function check(request: ChatRenderRequest, limits: TemplateLimits | undefined): { req: NormalizedApplyRequest; ends: PromptEnds } {
  const normalized = normalizeApplyRequest(request, RENDER_RULES);
  // the limits argument goes to the renderer unchecked, which checks it (ERR_INVALID_ARGUMENT)
  const req = limits === undefined ? normalized : { ...normalized, templateLimits: limits };
  const raw = request as unknown as Record<string, unknown>;
  return { req, ends: { addBos: optBool(raw, "add_bos"), addEos: optBool(raw, "add_eos") } };
}

function checkSource(source: unknown, entry: string): asserts source is string {
  if (typeof source !== "string") throw new LlamapegError("ERR_INVALID_ARGUMENT", `${entry}: the template source must be a string`, { where: "source" });
}

/** What a request's render starts from: the template's facts and the request's template input. */
export interface PreparedChatContext extends TemplateInput {
  /** The patched, normalized source that is rendered. */
  source: string;
  facts: TemplateFacts;
  req: NormalizedApplyRequest;
}

/** Checks `request` and prepares everything but the rendering itself. */
export function prepareChatContext(source: string, request: ChatRenderRequest, limits?: TemplateLimits): PreparedChatContext {
  checkSource(source, "prepareChatContext");
  const { req } = check(request, limits);
  const facts = templateFacts(source);
  return { ...templateInput(facts, req, shownTools(req)), source: facts.source, facts, req };
}

/** `renderChatTemplate`, with the prompt's input marks. */
export function renderChatPrompt(source: string, request: ChatRenderRequest, limits?: TemplateLimits): ChatPrompt {
  checkSource(source, "renderChatPrompt");
  const { req, ends } = check(request, limits);
  const facts = templateFacts(source);
  return renderInput(facts, templateInput(facts, req, shownTools(req)), req, ends);
}

/** The generation prompt of a request (two renders: with and without add_generation_prompt). */
export function renderGenerationPrompt(source: string, request: ChatRenderRequest, limits?: TemplateLimits): string {
  checkSource(source, "renderGenerationPrompt");
  const { req } = check(request, limits);
  const facts = templateFacts(source);
  const input = templateInput(facts, req, shownTools(req));
  return generationPromptAfter(facts, input, req, renderInput(facts, input, req));
}

/** The content-shape normalization alone, with the template's probed capabilities (the analysis probes' rule). */
export function normalizeMessageContent(source: string, messages: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  return fitContent(templateFacts(source).caps, messages);
}

function optBool(request: Record<string, unknown>, key: string): boolean {
  const v = request[key];
  if (v === undefined || v === null) return false;
  if (typeof v !== "boolean") throw new LlamapegError("ERR_INVALID_REQUEST", `${key} must be a boolean, got ${JSON.stringify(v)}`, { where: key });
  return v;
}

/**
 * Renders the prompt for `request` with the chat template `source`. The request is checked as
 * `applyChatTemplate` checks it. Throws ERR_TEMPLATE_RENDER when the template has a syntax error
 * or raises, ERR_TEMPLATE_LIMIT when it runs past a budget, ERR_INVALID_REQUEST for malformed
 * messages/tools.
 */
export function renderChatTemplate(source: string, request: ChatRenderRequest, limits?: TemplateLimits): string {
  checkSource(source, "renderChatTemplate");
  return renderChatPrompt(source, request, limits).prompt;
}
