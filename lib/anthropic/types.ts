/**
 * The Anthropic Messages API shapes llamapeg writes (text, thinking and tool_use blocks, the
 * streaming events). test/types/endpoint-packages.ts (compiled by
 * test/model/server-endpoint-types.test.ts) checks them against `@anthropic-ai/sdk`'s.
 */

export interface TextBlock {
  type: "text";
  text: string;
  citations: null;
}

export interface ThinkingBlock {
  type: "thinking";
  thinking: string;
  /** Anthropic signs its thinking so it can be sent back unaltered; a local model has nothing to sign. */
  signature: string;
}

export interface ToolUseBlock {
  type: "tool_use";
  id: string;
  name: string;
  input: unknown;
  caller: { type: "direct" };
}

export type ContentBlock = TextBlock | ThinkingBlock | ToolUseBlock;

export type StopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use";

export interface MessageUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: null;
  cache_read_input_tokens: number | null;
  cache_creation: null;
  inference_geo: null;
  /** Tokens inside the thinking block (Anthropic also counts its delimiters; we do not); null where the target does not count them. */
  output_tokens_details: { thinking_tokens: number } | null;
  server_tool_use: null;
  service_tier: "standard";
  speed: null;
}

export interface MessageObject {
  id: string;
  type: "message";
  role: "assistant";
  model: string;
  content: ContentBlock[];
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  stop_details: null;
  container: null;
  diagnostics: null;
  usage: MessageUsage;
}

export type MessageStreamEvent =
  | { type: "message_start"; message: MessageObject }
  | { type: "content_block_start"; index: number; content_block: ContentBlock }
  | { type: "content_block_delta"; index: number; delta: { type: "text_delta"; text: string } | { type: "thinking_delta"; thinking: string } | { type: "input_json_delta"; partial_json: string } }
  | { type: "content_block_stop"; index: number }
  | {
      type: "message_delta";
      delta: { stop_reason: StopReason; stop_sequence: string | null; stop_details: null; container: null };
      usage: { output_tokens: number; input_tokens: number | null; cache_creation_input_tokens: null; cache_read_input_tokens: number | null; output_tokens_details: { thinking_tokens: number } | null; server_tool_use: null };
    }
  | { type: "message_stop" };

/** Anthropic's error body. */
export interface AnthropicErrorBody {
  type: "error";
  error: { type: string; message: string };
}
