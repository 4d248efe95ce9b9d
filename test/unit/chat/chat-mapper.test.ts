import { describe, expect, it } from "vitest";
import { mapChatAst, type MapperAst, type MapperNode } from "../../../lib/chat/mapper.js";
import { jsonBraceDepth, pythonToJson, trimArgName } from "../../../lib/chat/normalize.js";
import { TAG } from "../../../lib/chat/tags.js";

/** A hand-built tagged tree: [tag, text, children]. */
type T = [string, string, T[]?];

function ast(trees: T[]): MapperAst<MapperNode & { text: string }> {
  const nodes: (MapperNode & { text: string })[] = [];
  const add = ([tag, text, kids]: T): number => {
    const id = nodes.length;
    const node = { tag, text, children: [] as number[] };
    nodes.push(node);
    node.children = (kids ?? []).map(add);
    return id;
  };
  const roots = trees.map(add);
  return { roots, node: (id) => nodes[id]!, text: (n) => n.text };
}

const call = (name: string, args: T[], close = true): T => [
  TAG.TOOL,
  "",
  [[TAG.TOOL_OPEN, "<f>"], [TAG.TOOL_NAME, name], [TAG.TOOL_ARGS, "", args], ...(close ? [[TAG.TOOL_CLOSE, "</f>"] as T] : [])],
];
const arg = (name: string, value: T | null, close = true): T => [
  TAG.TOOL_ARG,
  "",
  [[TAG.TOOL_ARG_OPEN, "<p>"], [TAG.TOOL_ARG_NAME, name], ...(value ? [value] : []), ...(close ? [[TAG.TOOL_ARG_CLOSE, "</p>"] as T] : [])],
];

describe("mapChatAst", () => {
  it("concatenates reasoning and content, and drops whitespace-only reasoning", () => {
    expect(mapChatAst(ast([[TAG.REASONING, "a"], [TAG.CONTENT, "x"], [TAG.REASONING, "b"], [TAG.CONTENT, "y"]]))).toMatchObject({
      reasoning_content: "ab",
      content: "xy",
    });
    expect(mapChatAst(ast([[TAG.REASONING, " \n\t"], [TAG.CONTENT, "x"]])).reasoning_content).toBe("");
  });

  it("builds JSON from tagged arguments: names quoted, strings escaped, Python values normalized", () => {
    const m = mapChatAst(
      ast([
        call("f", [
          arg("path ", [TAG.TOOL_ARG_STRING_VALUE, 'a "b"\n\\c']),
          arg("n", [TAG.TOOL_ARG_VALUE, "12"]),
          arg("opts", [TAG.TOOL_ARG_VALUE, "{'k': True, 'v': None}"]),
          arg("empty", [TAG.TOOL_ARG_STRING_VALUE, ""]),
        ]),
      ]),
    );
    expect(m.tool_calls).toEqual([{ id: "", type: "function", function: { name: "f", arguments: expect.any(String) } }]);
    expect(JSON.parse(m.tool_calls[0]!.function.arguments)).toEqual({ path: 'a "b"\n\\c', n: 12, opts: { k: true, v: null }, empty: "" });
  });

  it("on partial input leaves the string open and the object unclosed (a prefix of the final JSON)", () => {
    const partial = mapChatAst(ast([call("f", [arg("city", [TAG.TOOL_ARG_STRING_VALUE, "Bei"], false)], false)]));
    expect(partial.tool_calls[0]!.function.arguments).toBe('{"city":"Bei');
    const done = mapChatAst(ast([call("f", [arg("city", [TAG.TOOL_ARG_STRING_VALUE, "Beijing"])])]));
    expect(done.tool_calls[0]!.function.arguments).toBe('{"city":"Beijing"}');
    expect(done.tool_calls[0]!.function.arguments.startsWith(partial.tool_calls[0]!.function.arguments)).toBe(true);
  });

  it("holds arguments written before the name and attaches them once the name is known", () => {
    const tree: T = [
      TAG.TOOL,
      "",
      [[TAG.TOOL_OPEN, "<f>"], [TAG.TOOL_ARGS, "", [arg("a", [TAG.TOOL_ARG_VALUE, "1"])]], [TAG.TOOL_NAME, "g "], [TAG.TOOL_CLOSE, ""]],
    ];
    expect(mapChatAst(ast([tree])).tool_calls).toEqual([{ id: "", type: "function", function: { name: "g", arguments: '{"a":1}' } }]);
    // Without a name the call is dropped at tool-close.
    const nameless: T = [TAG.TOOL, "", [[TAG.TOOL_OPEN, "<f>"], [TAG.TOOL_ARGS, '{"a":1}'], [TAG.TOOL_CLOSE, ""]]];
    expect(mapChatAst(ast([nameless])).tool_calls).toEqual([]);
  });

  it("takes JSON arguments whole, ids without quotes, and closes braces at tool-close", () => {
    const tree: T = [
      TAG.TOOL,
      "",
      [[TAG.TOOL_OPEN, "{"], [TAG.TOOL_ID, '"call_1" '], [TAG.TOOL_NAME, "f"], [TAG.TOOL_ARGS, '{"a": {"b": "}"  \n'], [TAG.TOOL_CLOSE, "}"]],
    ];
    expect(mapChatAst(ast([tree])).tool_calls).toEqual([
      { id: "call_1", type: "function", function: { name: "f", arguments: '{"a": {"b": "}"}}' } },
    ]);
  });

  it("a named call is visible before it closes, and several calls keep their order", () => {
    const m = mapChatAst(ast([call("a", [arg("x", [TAG.TOOL_ARG_VALUE, "1"])]), call("b", [], false)]));
    expect(m.tool_calls.map((c) => [c.function.name, c.function.arguments])).toEqual([
      ["a", '{"x":1}'],
      ["b", "{"],
    ]);
  });
});

describe("normalize helpers", () => {
  it("pythonToJson converts quotes and literals, prefix-wise for cut literals", () => {
    expect(pythonToJson(`{'a': 'it\\'s', "b": 'say "hi"', 'c': [True, False, None]}`)).toBe(
      `{"a": "it's", "b": "say \\"hi\\"", "c": [true, false, null]}`,
    );
    expect(pythonToJson("[Tr")).toBe("[tr");
    expect(pythonToJson("Nonesuch")).toBe("Nonesuch");
    expect(pythonToJson("xTrue")).toBe("xTrue");
  });

  it("jsonBraceDepth ignores braces in strings", () => {
    expect(jsonBraceDepth('{"a": "{\\"}", "b": {')).toBe(2);
  });

  it("trimArgName drops one leading space and all trailing space", () => {
    expect(trimArgName("  a b \n")).toBe(" a b");
  });
});
