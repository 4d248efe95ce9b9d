/**
 * Source-level workarounds the reference applies to two template families before parsing
 * (`common_chat_templates_init`). Both disable a guard that raises on inputs llama.cpp itself
 * produces; without them the same requests fail. Listed in docs/templates.md.
 */
interface SourcePatch {
  /** Which templates it is for (docs). */
  name: string;
  applies(source: string): boolean;
  from: string;
  to: string;
}

export const SOURCE_PATCHES: readonly SourcePatch[] = [
  {
    // GPT-OSS raises when a message's content holds channel markers; llama.cpp re-renders such content.
    name: "gpt-oss: drop the channel-marker guard",
    applies: (s) => s.includes("<|channel|>") && s.includes("in message.content or"),
    from:
      '{%- if "<|channel|>analysis<|message|>" in message.content or ' + '"<|channel|>final<|message|>" in message.content %}',
    to: "{%- if false %}",
  },
  {
    // Mistral templates with [TOOL_CALLS] raise on an assistant message with neither content nor calls.
    name: "mistral [TOOL_CALLS]: drop the empty-assistant guard",
    applies: (s) => s.includes("[TOOL_CALLS]") && s.includes("if (message['content'] is none or"),
    from:
      "{%- if (message['content'] is none or message['content'] == '' or " +
      "message['content']|length == 0) and (message['tool_calls'] is not defined or " +
      "message['tool_calls'] is none or message['tool_calls']|length == 0) %}",
    to: "{%- if false %}",
  },
];

/** The source the reference renders and inspects: line endings normalized, patches applied. */
export function patchTemplateSource(source: string): string {
  let s = source.replace(/\r\n?/g, "\n");
  for (const p of SOURCE_PATCHES) if (p.applies(s)) s = s.split(p.from).join(p.to);
  return s;
}
