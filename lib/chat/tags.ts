/**
 * Semantic tags shared by the chat grammar builders (which put them on PEG nodes) and the mapper
 * (which reads them back from the AST). The strings are the ones llama.cpp's chat PEG builder uses,
 * so a tree serialized by either implementation maps the same way.
 */
export const TAG = {
  REASONING_BLOCK: "reasoning-block",
  REASONING: "reasoning",
  CONTENT: "content",
  TOOL: "tool",
  TOOL_OPEN: "tool-open",
  TOOL_CLOSE: "tool-close",
  TOOL_ID: "tool-id",
  TOOL_NAME: "tool-name",
  TOOL_ARGS: "tool-args",
  TOOL_ARG: "tool-arg",
  TOOL_ARG_OPEN: "tool-arg-open",
  TOOL_ARG_CLOSE: "tool-arg-close",
  TOOL_ARG_NAME: "tool-arg-name",
  TOOL_ARG_VALUE: "tool-arg-value",
  /** A value the tool's schema declares as a string: quoted and escaped by the mapper, never read as JSON. */
  TOOL_ARG_STRING_VALUE: "tool-arg-string-value",
} as const;

export type ChatTag = (typeof TAG)[keyof typeof TAG];

/** Beyond this many blocks `permute` falls back to a fixed order (n! alternatives grow too fast). */
export const MAX_PERMUTE = 6;
