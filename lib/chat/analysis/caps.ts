/**
 * Template capabilities, inferred by rendering. The reference (`jinja::caps_get`) watches which
 * input values the template touches; until the project's own renderer (lib/chat/template) exposes
 * those usage stats, this infers the same flags from output differences: a value the template
 * uses changes what it renders when the value changes.
 */
import type { ProbeTemplate } from "./render.js";
import type { TemplateCaps } from "./types.js";

type Msg = Record<string, unknown>;

function tryRender(t: ProbeTemplate, messages: Msg[], tools?: unknown[]): string | null {
  try {
    return t.render({ messages, tools: tools ?? [], addGenerationPrompt: true, enableThinking: true });
  } catch {
    return null;
  }
}

function probeTool(name: string) {
  return {
    name: "tool",
    type: "function",
    function: {
      name,
      description: "Tool description",
      parameters: {
        type: "object",
        properties: { arg: { type: "string", description: "Arg description" } },
        required: ["arg"],
      },
    },
  };
}

function toolTurns(calls: unknown[]): Msg[] {
  return [
    { role: "user", content: "User message" },
    { role: "assistant", content: "", tool_calls: calls },
    { role: "tool", content: "Tool response", tool_call_id: "call00001" },
    { role: "assistant", content: "The tool response was 'tool response'" },
    { role: "user", content: "User message" },
  ];
}

function call(id: string, name: string, args: unknown) {
  return { id, type: "function", function: { name, arguments: args } };
}

export function probeCaps(t: ProbeTemplate): TemplateCaps {
  const caps: TemplateCaps = {
    supportsTools: true,
    supportsToolCalls: true,
    supportsSystemRole: true,
    supportsParallelToolCalls: true,
    supportsPreserveReasoning: false,
    supportsReasoningEffort: false,
    supportsStringContent: true,
    supportsTypedContent: false,
    supportsObjectArguments: false,
  };

  // content: string vs typed parts
  const MARK = "STRING_MARKER";
  const asString = tryRender(t, [{ role: "user", content: MARK }]);
  const asTyped = tryRender(t, [{ role: "user", content: [{ type: "text", text: MARK }] }]);
  const typedWorks = asTyped !== null && asTyped.includes(MARK) && !asTyped.includes("'type'") && !asTyped.includes('"type"');
  if (typedWorks) caps.supportsTypedContent = true;
  if (asString === null || (typedWorks && !asString.includes(MARK))) caps.supportsStringContent = false;

  // system role: the system text reaches the output
  const sys = (text: string) =>
    tryRender(t, [
      { role: "system", content: text },
      { role: "user", content: "User message" },
    ]);
  const sysA = sys("System message A1");
  const sysB = sys("System message B2");
  if (sysA === null || sysB === null || sysA === sysB) caps.supportsSystemRole = false;

  // tools and tool calls, object arguments first, then string arguments
  const objArgs = { arg: "value" };
  const objOut = tryRender(t, toolTurns([call("call00001", "tool1", objArgs)]), [probeTool("tool1")]);
  let argsForParallel: unknown = JSON.stringify(objArgs);
  if (objOut !== null) {
    const otherVal = tryRender(t, toolTurns([call("call00001", "tool1", { arg: "other" })]), [probeTool("tool1")]);
    if (otherVal !== null && otherVal !== objOut) {
      caps.supportsObjectArguments = true;
      argsForParallel = objArgs;
    }
  }
  const strArgs = JSON.stringify(objArgs);
  const base = caps.supportsObjectArguments ? objOut : tryRender(t, toolTurns([call("call00001", "tool1", strArgs)]), [probeTool("tool1")]);
  if (base === null) {
    caps.supportsToolCalls = false;
    caps.supportsTools = false;
  } else {
    const args = caps.supportsObjectArguments ? objArgs : strArgs;
    const otherToolName = tryRender(t, toolTurns([call("call00001", "tool1", args)]), [probeTool("tool9")]);
    if (otherToolName === null || otherToolName === base) caps.supportsTools = false;
    const otherCallName = tryRender(t, toolTurns([call("call00001", "tool8", args)]), [probeTool("tool1")]);
    const noCalls = tryRender(t, toolTurns([]), [probeTool("tool1")]);
    if ((otherCallName === null || otherCallName === base) && (noCalls === null || noCalls === base)) {
      caps.supportsToolCalls = false;
    }
  }

  // parallel calls: the second call reaches the output
  if (caps.supportsToolCalls) {
    const two = (name: string) =>
      tryRender(t, toolTurns([call("call00001", "tool1", argsForParallel), call("call00002", name, argsForParallel)]), [
        probeTool("tool1"),
      ]);
    const a = two("tool1");
    const b = two("tool7");
    if (a === null || b === null || a === b) caps.supportsParallelToolCalls = false;
  } else {
    // a template that ignores tool calls cannot render a second one either
    caps.supportsParallelToolCalls = false;
  }
  return caps;
}
