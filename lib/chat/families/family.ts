/**
 * One model family: how its templates are recognized, what the reference does to messages before
 * its template sees them, the plan it builds (the output tree, the grammar's mode, triggers and
 * markers), and, where its arguments are not JSON text, the mapper from its tree to a message.
 * Each family lives in one file of this folder (`registry.ts` lists them in detection order); the
 * template analysis path (`../analysis/`, planned by `../apply/autoparser.ts`) builds the same kind of plan for every other template.
 */
import type { Marks } from "../../jinja/index.js";
import type { PegParser } from "../../peg/builder.js";
import type { NormalizedApplyRequest } from "../apply/request.js";
import type { ChatPegBuilder } from "../grammar/builder.js";
import type { AssistantMessage, ChatMessage } from "../messages.js";
import type { GrammarTrigger } from "../plan.js";

/** The reference's specialized handlers (`common_chat_params_init_<family>`), in detection order. */
export type FamilyName =
  | "ministral-3"
  | "gpt-oss"
  | "muse-glimmer"
  | "functionary-v3.2"
  | "kimi-k2"
  | "kimi-k3"
  | "cohere2-moe"
  | "lfm2"
  | "lfm2.5"
  | "gigachat-v3"
  | "minimax-m3"
  | "deepseek-v3.2"
  | "gemma4"
  | "minicpm5"
  | "qwen3-coder";

type JsonObject = Record<string, unknown>;

/**
 * What a plan is built from. `req` is the checked request with `tools`, `toolChoice` and
 * `jsonSchema` as the grammar sees them: only the named tool for a named tool_choice, schemas the
 * grammar cannot enforce degraded, and, for the two halves of a tools + response-schema request,
 * one side each.
 */
export interface PlanInput {
  /** The template source as given. */
  source: string;
  req: NormalizedApplyRequest;
  prompt: string;
  generationPrompt: string;
}

/** The output tree of a plan, built into the plan's one arena. */
export interface OutputTree {
  /** The whole output, generation prompt first: what the parser parses. */
  root: PegParser;
  /**
   * For tool_choice "required": the same output with no text before the calls (the reasoning
   * block, where the syntax has one, then the calls). The grammar of a calls-only request.
   */
  callsOnly?: PegParser;
}

export interface FamilyPlan {
  /** The output format (names the mapper): "peg-native" unless the family maps its own tree. */
  format: string;
  /** Builds the tree into `p` (called once per plan, twice into one builder for tools + schema). */
  build(p: ChatPegBuilder): OutputTree;
  /** What the tree's GBNF does for sampling: nothing, constrain from the start, or once triggered. */
  grammar: "none" | "eager" | "lazy";
  /** The lazy grammar's triggers ([] unless `grammar` is "lazy"; some families list them always, as the reference). */
  triggers: GrammarTrigger[];
  preservedTokens: string[];
  additionalStops: string[];
  thinkingStartTag: string;
  thinkingEndTags: string[];
  /** False for a family whose reference handler ignores a JSON-schema response format. Default true. */
  supportsResponseFormat?: boolean;
  /** Replaces the rendered prompt (a family that opens the model's turn itself). */
  prompt?: string;
  /** Replaces the rendered generation prompt. */
  generationPrompt?: string;
}

/** The parse tree (by node id) as a family's own mapper reads it; the generic mapper reads `MapperAst` (mapper.ts). */
export interface FamilyAstView {
  readonly roots: readonly number[];
  tag(id: number): string;
  rule(id: number): string;
  children(id: number): readonly number[];
  isPartial(id: number): boolean;
  text(id: number): string;
}

export interface ChatFamily {
  name: FamilyName;
  /** Recognizes the family from the (patched) template source, as the reference does. */
  detect(source: string): boolean;
  /** Rewrites the prepared messages; their content shape is normalized again afterwards (Gemma 4). */
  rewriteMessages?(messages: JsonObject[], source: string): JsonObject[] | undefined;
  /** The messages as the reference's handler builds them (rendered as they are); undefined: as prepared. */
  prepareMessages?(messages: JsonObject[], source: string): JsonObject[] | undefined;
  /** Extra template variables (DeepSeek V4 prints the response schema). */
  templateVariables?(source: string, request: { json_schema?: unknown }): JsonObject | undefined;
  /** Rewrites the checked messages before they take the reference's JSON form (StepFun trims whitespace). */
  rewriteChatMessages?(messages: ChatMessage[]): ChatMessage[];
  /** Keeps the `developer` role, which becomes `system` for every other template (GPT-OSS). */
  keepsDeveloperRole?: boolean;
  /** Changes the rendered prompt, its input marks kept in step (GPT-OSS ends an inference prompt's last turn with `<|end|>`). */
  finishPrompt?(prompt: string, marks: Marks, addGenerationPrompt: boolean): { prompt: string; marks: Marks };
  plan(input: PlanInput): FamilyPlan;
  /**
   * What of the rendered prompt, besides the generation prompt, the plan depends on (Gemma 4: a
   * prompt that ends a model turn makes it open a new one); "" or absent for nothing. Part of the
   * plan cache's key.
   */
  promptVariant?(prompt: string, req: NormalizedApplyRequest): string;
  /** The mapper of plans whose `format` is `mapper.format`. */
  mapper?: { format: string; map(ast: FamilyAstView): AssistantMessage };
}

/** What the reference does to the input of a template it recognizes without a plan of its own (StepFun, quirks.ts). */
export type TemplateQuirks = Pick<ChatFamily, "detect" | "rewriteChatMessages">;
