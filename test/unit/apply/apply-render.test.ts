import { describe, expect, it } from "vitest";

import { LlamapegError } from "../../../lib/errors.js";
import { normalizeMessageContent, prepareChatContext, renderChatTemplate, renderGenerationPrompt } from "../../../lib/chat/apply/render.js";
import { templateCaps } from "../../../lib/jinja/index.js";

// A small template that shows what it receives.
const ECHO = [
  "{% for m in messages %}[{{ m.role }}]",
  "{% if m.content is string %}{{ m.content }}{% else %}{{ m.content | tojson }}{% endif %}",
  "{% for tc in m.tool_calls or [] %}<call {{ tc.function.name }} {{ tc.function.arguments | tojson }}>{% endfor %}",
  "{% endfor %}",
  "{% if tools is defined %}{tools:{{ tools | map(attribute='function') | map(attribute='name') | join(',') }}}{% endif %}",
  "{% if add_generation_prompt is defined %}<gen>{% endif %}",
].join("");

const call = { id: "c1", type: "function", function: { name: "f", arguments: '{"a": 1}' } };

describe("chat rendering: context", () => {
  it("passes add_generation_prompt only when true (templates test `is defined`)", () => {
    const msgs = [{ role: "user", content: "hi" }];
    expect(renderChatTemplate(ECHO, { messages: msgs })).toBe("[user]hi<gen>");
    expect(renderChatTemplate(ECHO, { messages: msgs, add_generation_prompt: false })).toBe("[user]hi");
    expect(renderGenerationPrompt(ECHO, { messages: msgs })).toBe("<gen>");
  });

  it("parses tool-call arguments into objects when the template reads them as objects", () => {
    const caps = templateCaps(ECHO);
    expect(caps.supportsObjectArguments).toBe(true);
    const out = renderChatTemplate(ECHO, { messages: [{ role: "assistant", content: null, tool_calls: [call] }], add_generation_prompt: false });
    expect(out).toBe('[assistant]<call f {"a": 1}>');
  });

  it("keeps arguments as JSON text for templates that print them as strings", () => {
    const src = "{% for m in messages %}{% for tc in m.tool_calls %}{{ tc.function.arguments }}{% endfor %}{% endfor %}";
    expect(templateCaps(src).supportsObjectArguments).toBe(false);
    expect(renderChatTemplate(src, { messages: [{ role: "assistant", content: "", tool_calls: [call] }] })).toBe('{"a": 1}');
  });

  it("normalizes tools and leaves them out when empty", () => {
    const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object" }, strict: true } }];
    const prepared = prepareChatContext(ECHO, { messages: [{ role: "user", content: "x" }], tools });
    expect(prepared.variables.tools).toEqual([{ type: "function", function: { name: "get_weather", description: "", parameters: { type: "object" } } }]);
    expect(prepareChatContext(ECHO, { messages: [{ role: "user", content: "x" }], tools: [] }).variables).not.toHaveProperty("tools");
  });

  it("maps developer to system and merges system into the next message where the template ignores it", () => {
    const noSystem = "{% for m in messages %}{% if m.role == 'user' %}U:{{ m.content }}{% endif %}{% endfor %}";
    expect(templateCaps(noSystem).supportsSystemRole).toBe(false);
    const msgs = [
      { role: "developer", content: "be brief" },
      { role: "user", content: "hi" },
    ];
    expect(renderChatTemplate(noSystem, { messages: msgs })).toBe("U:be brief\nhi");
    expect(renderChatTemplate(ECHO, { messages: msgs, add_generation_prompt: false })).toBe("[system]be brief[user]hi");
  });

  it("joins typed content parts for string-only templates and wraps strings for typed-only ones", () => {
    const parts = [
      { type: "text", text: "a" },
      { type: "text", text: "b" },
    ];
    expect(renderChatTemplate("{{ messages[0].content }}", { messages: [{ role: "user", content: parts }] })).toBe("a\nb");
    const typedOnly = "{% for p in messages[0].content %}<{{ p.text }}>{% endfor %}";
    const caps = templateCaps(typedOnly);
    expect([caps.supportsTypedContent, caps.supportsStringContent]).toEqual([true, false]);
    expect(renderChatTemplate(typedOnly, { messages: [{ role: "user", content: "s" }] })).toBe("<s>");
  });

  it("exposes the content-shape normalization alone", () => {
    const typedOnly = "{% for p in messages[0].content %}<{{ p.text }}>{% endfor %}";
    expect(normalizeMessageContent(typedOnly, [{ role: "user", content: "s" }])).toEqual([{ role: "user", content: [{ type: "text", text: "s" }] }]);
    expect(normalizeMessageContent(ECHO, [{ role: "user", content: "s" }])).toEqual([{ role: "user", content: "s" }]);
  });

  it("provides datetime, date_string and strftime_now from `now`, and chat_template_kwargs override", () => {
    const src = "{{ datetime }}|{{ date_string }}|{{ strftime_now('%d %B') }}|{{ enable_thinking }}|{{ custom }}";
    const now = new Date(2025, 1, 3, 10, 0, 0);
    const out = renderChatTemplate(src, { messages: [], now, chat_template_kwargs: { custom: 7, enable_thinking: false } });
    expect(out).toBe("Feb 03 2025|03 Feb 2025|03 February|False|7");
  });

  it("strips BOS/EOS the model adds itself", () => {
    const src = "{{ bos_token }}x{{ eos_token }}";
    const req = { messages: [], bos_token: "<s>", eos_token: "</s>" };
    expect(renderChatTemplate(src, req)).toBe("<s>x</s>");
    expect(renderChatTemplate(src, { ...req, add_bos: true, add_eos: true })).toBe("x");
  });
});

describe("chat rendering: errors", () => {
  it("a template that raises is ERR_TEMPLATE_RENDER with its message", () => {
    const src =
      "{% for m in messages %}{% if m.role not in ['system', 'user', 'assistant'] %}" +
      "{{ raise_exception('no such role here: ' + m.role) }}{% endif %}{{ m.content }}{% endfor %}";
    try {
      renderChatTemplate(src, { messages: [{ role: "critic", content: "u" }] });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(LlamapegError);
      expect((e as LlamapegError).code).toBe("ERR_TEMPLATE_RENDER");
      expect((e as LlamapegError).message).toContain("no such role here: critic");
    }
  });

  it("malformed messages are ERR_INVALID_REQUEST naming the field", () => {
    try {
      renderChatTemplate(ECHO, { messages: [{ role: "assistant", tool_calls: [{ type: "function", function: {} }] }] });
      expect.unreachable();
    } catch (e) {
      expect((e as LlamapegError).code).toBe("ERR_INVALID_REQUEST");
      expect((e as LlamapegError).where).toBe("messages[0].tool_calls[0].function.name");
    }
  });

  it("arguments that are not JSON never fail the conversation where the template needs objects: a cut object is closed, other text is {}", () => {
    const render = (args: string) => renderChatTemplate(ECHO, { messages: [{ role: "assistant", content: "", tool_calls: [{ ...call, function: { name: "f", arguments: args } }] }] });
    expect(render('{"a": "Par')).toBe(render('{"a": "Par"}'));
    expect(render("not json")).toBe(render("{}"));
  });
});

describe("chat rendering: JSON arguments", () => {
  it("keeps floats written as floats and the key order of the JSON text", () => {
    const src =
      "{% for m in messages %}{% for tc in m.tool_calls or [] %}" +
      "{{ tc.function.arguments | tojson }}|{{ tc.function.arguments.r }}{% endfor %}{% endfor %}";
    const args = '{"2": "two", "1": "one", "r": 1.0, "e": 1e-7, "n": [1, 2.5]}';
    const out = renderChatTemplate(src, {
      messages: [{ role: "assistant", content: "", tool_calls: [{ id: "x", type: "function", function: { name: "f", arguments: args } }] }],
    });
    expect(out).toBe('{"2": "two", "1": "one", "r": 1.0, "e": 1e-07, "n": [1, 2.5]}|1.0');
    // llama.cpp's engine prints JSON floats with %g: 1.0 as 1
    const ref = renderChatTemplate(src, {
      messages: [{ role: "assistant", content: "", tool_calls: [{ id: "x", type: "function", function: { name: "f", arguments: args } }] }],
      reference_mode: true,
    });
    expect(ref).toBe('{"2": "two", "1": "one", "r": 1, "e": 1e-07, "n": [1, 2.5]}|1.0');
  });
});
