/**
 * Template capabilities, probed the way the reference does (`common/jinja/caps.cpp`): render
 * small conversations with usage tracking on, then look at which inputs the template touched.
 * The results decide the message workarounds the chat layer applies before rendering
 * (lib/chat/apply/template-input.ts), so they
 * must match the reference's exactly. Cached per template hash.
 */
import { boundedCache } from "../cache.js";
import { compileTemplate } from "./compile.js";
import { TemplateLimitError } from "./errors.js";
import { Evaluator } from "./interpreter.js";
import { Budget, DEFAULT_TEMPLATE_LIMITS } from "./limits.js";
import { asRenderError, baseScope } from "./render.js";
import { type JValue, bool, fromJS, objGet, str } from "./value.js";

export interface TemplateCaps {
  supportsStringContent: boolean;
  supportsTypedContent: boolean;
  supportsTools: boolean;
  supportsToolCalls: boolean;
  supportsParallelToolCalls: boolean;
  supportsSystemRole: boolean;
  supportsPreserveReasoning: boolean;
  supportsReasoningEffort: boolean;
  supportsObjectArguments: boolean;
}

/** Sets the variables the reference's `preserve_reasoning` kwarg maps to. */
export function preserveReasoningVars(enabled: boolean): Record<string, boolean> {
  return { preserve_thinking: enabled, clear_thinking: !enabled, truncate_history_thinking: !enabled, drop_thinking: !enabled };
}

const cache = boundedCache<string, TemplateCaps>(64);

interface ProbeResult {
  ok: boolean;
  output: string;
  messages: JValue;
  tools: JValue;
  vars: Map<string, JValue>;
}

function probe(source: string, messages: unknown[], tools: unknown[] | undefined, extra: Record<string, JValue> = {}): ProbeResult {
  const compiled = compileTemplate(source);
  const scope = baseScope();
  const messagesV = fromJS(messages);
  const toolsV = fromJS(tools ?? []);
  scope.set("messages", messagesV);
  scope.set("tools", toolsV);
  scope.set("bos_token", str(""));
  scope.set("eos_token", str(""));
  scope.set("add_generation_prompt", bool(true));
  for (const [k, v] of Object.entries(extra)) scope.set(k, v);
  let output = "";
  let ok = true;
  try {
    output = new Evaluator({ stats: true, now: new Date() }, new Budget(DEFAULT_TEMPLATE_LIMITS)).render(compiled.program, scope);
  } catch (e) {
    // a probe that runs out of budget means the template is too costly to use at all
    if (e instanceof TemplateLimitError || (e instanceof RangeError && /call stack/i.test(e.message))) throw asRenderError(e, compiled);
    ok = false; // a probe that fails only tells us something is unsupported
  }
  return { ok, output, messages: messagesV, tools: toolsV, vars: scope.vars };
}

/** Walks object keys / array indexes; a missing step gives undefined. */
function at(v: JValue | undefined, ...path: (string | number)[]): JValue | undefined {
  let cur = v;
  for (const p of path) {
    if (cur === undefined) return undefined;
    if (typeof p === "number") cur = cur.kind === "array" ? cur.items[p] : undefined;
    else cur = cur.kind === "object" ? objGet(cur, str(p)) : undefined;
  }
  return cur;
}

const used = (v: JValue | undefined): boolean => v?.stats?.used === true;
const hasOp = (v: JValue | undefined, op: string): boolean => v?.stats?.ops.has(op) === true;

const TOOLS = [
  {
    name: "tool",
    type: "function",
    function: {
      name: "tool1",
      description: "Tool description",
      parameters: {
        type: "object",
        properties: { arg: { type: "string", description: "Arg description" } },
        required: ["arg"],
      },
    },
  },
];

function toolConversation(args: unknown, calls: number): unknown[] {
  const call = (i: number): unknown => ({
    id: `call0000${i}`,
    type: "function",
    function: { name: "tool1", arguments: args },
  });
  return [
    { role: "user", content: "User message" },
    { role: "assistant", content: "", tool_calls: Array.from({ length: calls }, (_, i) => call(i + 1)) },
    { role: "tool", content: "Tool response", tool_call_id: "call00001" },
    { role: "assistant", content: "The tool response was 'tool response'" },
    { role: "user", content: "User message" },
  ];
}

/** The reference's `caps_get`, probe for probe. */
export function templateCaps(source: string): TemplateCaps {
  const hash = compileTemplate(source).hash;
  const hit = cache.get(hash);
  if (hit) return { ...hit };
  const caps: TemplateCaps = {
    supportsStringContent: true,
    supportsTypedContent: false,
    supportsTools: true,
    supportsToolCalls: true,
    supportsParallelToolCalls: true,
    supportsSystemRole: true,
    supportsPreserveReasoning: false,
    supportsReasoningEffort: false,
    supportsObjectArguments: false,
  };

  // typed content: is a plain-string content used as an array?
  {
    const marker = "STRING_MARKER";
    const r = probe(source, [{ role: "user", content: marker }], undefined);
    const content = at(r.messages, 0, "content");
    const asArray = hasOp(content, "selectattr") || hasOp(content, "array_access");
    if (asArray) caps.supportsTypedContent = true;
    if (!r.ok) caps.supportsStringContent = false;
    else if (asArray && !r.output.includes(marker)) caps.supportsStringContent = false;
  }

  // system role: is the system message's content read at all?
  {
    const r = probe(
      source,
      [
        { role: "system", content: "System message" },
        { role: "user", content: "User message" },
      ],
      undefined,
    );
    if (!used(at(r.messages, 0, "content"))) caps.supportsSystemRole = false;
  }

  // tools with object arguments
  {
    const r = probe(source, toolConversation({ arg: "value" }, 1), TOOLS);
    if (r.ok) {
      if (!used(at(r.tools, 0, "function", "name"))) caps.supportsTools = false;
      const calls = at(r.messages, 1, "tool_calls");
      if (!used(calls)) caps.supportsToolCalls = false;
      else if (used(at(calls, 0, "function", "arguments", "arg"))) caps.supportsObjectArguments = true;
    }
  }

  // tools with string arguments (only when object arguments were not detected)
  if (!caps.supportsObjectArguments) {
    const r = probe(source, toolConversation('{"arg": "value"}', 1), TOOLS);
    if (!r.ok) {
      caps.supportsToolCalls = false;
      caps.supportsTools = false;
    } else {
      if (!used(at(r.tools, 0, "function", "name"))) caps.supportsTools = false;
      if (!used(at(r.messages, 1, "tool_calls"))) caps.supportsToolCalls = false;
    }
  }

  // parallel tool calls
  {
    const args = caps.supportsObjectArguments ? { arg: "value" } : '{"arg": "value"}';
    const r = probe(source, toolConversation(args, 2), TOOLS);
    if (!r.ok) caps.supportsParallelToolCalls = false;
    else if (!used(at(r.messages, 1, "tool_calls", 1, "function"))) caps.supportsParallelToolCalls = false;
  }

  // preserved reasoning in history
  {
    const placeholder = "<REASONING_CONTENT_PLACEHOLDER>";
    const extra: Record<string, JValue> = { enable_thinking: bool(true) };
    for (const [k, v] of Object.entries(preserveReasoningVars(true))) extra[k] = bool(v);
    const r = probe(
      source,
      [
        { role: "user", content: "User message" },
        { role: "assistant", content: "Assistant message", reasoning_content: placeholder },
        { role: "user", content: "User message" },
        { role: "assistant", content: "Assistant message", reasoning_content: "Reasoning content" },
        { role: "user", content: "User message" },
      ],
      undefined,
      extra,
    );
    if (r.output.includes(placeholder)) caps.supportsPreserveReasoning = true;
  }

  // reasoning effort: one value bound to both names, as the reference does
  {
    const effort = str("low");
    const r = probe(source, [{ role: "user", content: "User message" }], undefined, {
      enable_thinking: bool(true),
      reasoning_effort: effort,
      reasoning_strength: effort,
    });
    caps.supportsReasoningEffort = used(r.vars.get("reasoning_effort"));
  }

  cache.set(hash, caps);
  return { ...caps };
}
