/**
 * The OpenAI Responses API shapes llamapeg writes (the subset it implements: text, reasoning and
 * function-call output items, and the streaming events the `openai` package's Responses helpers
 * read). test/types/endpoint-packages.ts (compiled by test/model/server-endpoint-types.test.ts)
 * checks them against the package's own types.
 */

export interface ResponseOutputText {
  type: "output_text";
  text: string;
  annotations: never[];
  logprobs?: never[];
}

export interface ResponseReasoningText {
  type: "reasoning_text";
  text: string;
}

export type ItemStatus = "in_progress" | "completed" | "incomplete";

export interface ResponseMessageItem {
  type: "message";
  id: string;
  role: "assistant";
  status: ItemStatus;
  content: ResponseOutputText[];
}

export interface ResponseReasoningItem {
  type: "reasoning";
  id: string;
  summary: never[];
  /** The model's thinking as it wrote it (OpenAI sends only summaries; a local model has the text). */
  content: ResponseReasoningText[];
  status: ItemStatus;
}

export interface ResponseFunctionCallItem {
  type: "function_call";
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: ItemStatus;
}

export type ResponseOutputItem = ResponseMessageItem | ResponseReasoningItem | ResponseFunctionCallItem;

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export interface ResponseFunctionTool {
  type: "function";
  name: string;
  description?: string | null;
  parameters: Record<string, unknown> | null;
  strict: boolean | null;
}

export type ResponseToolChoice = "auto" | "none" | "required" | { type: "function"; name: string };

export interface ResponseTextFormat {
  format: { type: "text" } | { type: "json_object" } | { type: "json_schema"; name: string; schema: Record<string, unknown>; description?: string; strict?: boolean | null };
}

/** `response` objects: the non-stream answer and the payload of the lifecycle events. */
export interface ResponseObject {
  id: string;
  object: "response";
  created_at: number;
  status: "in_progress" | "completed" | "incomplete";
  error: null;
  incomplete_details: { reason: "max_output_tokens" } | null;
  instructions: string | null;
  metadata: Record<string, string> | null;
  model: string;
  output: ResponseOutputItem[];
  /** The text of every output_text part, concatenated (what the SDK's `output_text` gives). */
  output_text: string;
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  reasoning: { effort: "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | null; summary: null } | null;
  store: boolean;
  temperature: number | null;
  text: ResponseTextFormat;
  tool_choice: ResponseToolChoice;
  tools: ResponseFunctionTool[];
  top_p: number | null;
  max_output_tokens: number | null;
  truncation: "disabled";
  usage?: ResponseUsage;
}

interface Seq {
  sequence_number: number;
}

export type ResponseStreamEvent =
  | ({ type: "response.created" | "response.in_progress" | "response.completed" | "response.incomplete"; response: ResponseObject } & Seq)
  | ({ type: "response.output_item.added" | "response.output_item.done"; output_index: number; item: ResponseOutputItem } & Seq)
  | ({ type: "response.content_part.added" | "response.content_part.done"; output_index: number; item_id: string; content_index: number; part: ResponseOutputText | ResponseReasoningText } & Seq)
  | ({ type: "response.output_text.delta"; output_index: number; item_id: string; content_index: number; delta: string; logprobs: never[] } & Seq)
  | ({ type: "response.output_text.done"; output_index: number; item_id: string; content_index: number; text: string; logprobs: never[] } & Seq)
  | ({ type: "response.reasoning_text.delta"; output_index: number; item_id: string; content_index: number; delta: string } & Seq)
  | ({ type: "response.reasoning_text.done"; output_index: number; item_id: string; content_index: number; text: string } & Seq)
  | ({ type: "response.function_call_arguments.delta"; output_index: number; item_id: string; delta: string } & Seq)
  | ({ type: "response.function_call_arguments.done"; output_index: number; item_id: string; name: string; arguments: string } & Seq);
