import { describe, expect, it } from "vitest";
import { LlamapegError } from "../../../lib/errors.js";
import { concatContentParts, parseChatMessages, toOpenAIMessage } from "../../../lib/chat/messages.js";

function errorOf(fn: () => unknown): LlamapegError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(LlamapegError);
    return e as LlamapegError;
  }
  throw new Error("expected an error");
}

describe("parseChatMessages", () => {
  it("accepts arguments as a string or as an object, and normalizes both to a string", () => {
    const msgs = parseChatMessages([
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "a", type: "function", function: { name: "f", arguments: '{"x":1}' } },
          { type: "function", function: { name: "g", arguments: { y: [1, "two"] } } },
        ],
      },
      { role: "tool", content: "42", tool_call_id: "a", name: "f" },
    ]);
    expect(msgs[1]!.tool_calls).toEqual([
      { id: "a", type: "function", function: { name: "f", arguments: '{"x":1}' } },
      { id: "", type: "function", function: { name: "g", arguments: '{"y":[1,"two"]}' } },
    ]);
    expect(msgs[2]).toEqual({ role: "tool", content: "42", tool_call_id: "a", name: "f" });
  });

  it("keeps typed content parts", () => {
    const [m] = parseChatMessages([{ role: "user", content: [{ type: "text", text: "a" }, { type: "media_marker", text: "<m>" }] }]);
    expect(m!.content).toEqual([{ type: "text", text: "a" }, { type: "media_marker", text: "<m>" }]);
  });

  it.each([
    [[{ role: "user" }], "messages[0]"],
    [[{ content: "x" }], "messages[0].role"],
    [[{ role: "user", content: 3 }], "messages[0].content"],
    [[{ role: "user", content: [{ type: "image_url", text: "" }] }], "messages[0].content[0].type"],
    [[{ role: "user", content: [{ type: "text" }] }], "messages[0].content[0].text"],
    [[{ role: "user", content: "a" }, { role: "assistant", content: null, tool_calls: {} }], "messages[1].tool_calls"],
    [
      [
        { role: "user", content: "a" },
        { role: "user", content: "b" },
        { role: "user", content: "c" },
        { role: "assistant", tool_calls: [{ type: "function", function: { name: "", arguments: "{}" } }] },
      ],
      "messages[3].tool_calls[0].function.name",
    ],
    [[{ role: "assistant", tool_calls: [{ function: { name: "f", arguments: "{}" } }] }], "messages[0].tool_calls[0].type"],
    [[{ role: "assistant", tool_calls: [{ type: "function", function: { name: "f" } }] }], "messages[0].tool_calls[0].function.arguments"],
    [[{ role: "assistant", tool_calls: [{ type: "function", function: { name: "f", arguments: "{}" }, id: 3 }] }], "messages[0].tool_calls[0].id"],
    [[{ role: "assistant", content: "x", reasoning_content: 1 }], "messages[0].reasoning_content"],
  ])("rejects %j naming %s", (input, where) => {
    const e = errorOf(() => parseChatMessages(input));
    expect(e.code).toBe("ERR_INVALID_REQUEST");
    expect(e.where).toBe(where);
    expect(e.message).toContain(where);
  });

  it("rejects a non-array", () => {
    expect(errorOf(() => parseChatMessages({})).where).toBe("messages");
  });
});

describe("toOpenAIMessage", () => {
  it("omits empty optional fields and uses null content next to tool calls", () => {
    expect(
      toOpenAIMessage({
        role: "assistant",
        content: "",
        reasoning_content: "",
        tool_calls: [{ id: "", type: "function", function: { name: "f", arguments: "{}" } }],
      }),
    ).toEqual({ role: "assistant", content: null, tool_calls: [{ type: "function", function: { name: "f", arguments: "{}" } }] });
    expect(toOpenAIMessage({ role: "assistant", content: "hi", reasoning_content: "r", tool_calls: [] })).toEqual({
      role: "assistant",
      content: "hi",
      reasoning_content: "r",
    });
  });

  it("round-trips through parseChatMessages", () => {
    const src = [
      { role: "system", content: "s" },
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] },
      { role: "tool", content: "r", tool_call_id: "c1" },
    ];
    expect(parseChatMessages(src).map(toOpenAIMessage)).toEqual(src);
  });
});

describe("concatContentParts", () => {
  it("joins text with newlines but not around media markers", () => {
    expect(
      concatContentParts([
        { type: "text", text: "a" },
        { type: "text", text: "b" },
        { type: "media_marker", text: "<m>" },
        { type: "text", text: "c" },
      ]),
    ).toBe("a\nb<m>c");
  });
});
