/** The messages between the server's event loop and its planning thread (plan-worker.ts, plan-worker-main.ts). */
import type { AppliedChatPlan } from "../chat/apply/index.js";
import type { LlamapegErrorCode } from "../errors.js";
import type { PegNode, PegNodeId } from "../peg/nodes.js";

/** Parser arenas each side keeps (the planning thread's plan cache holds 32 x 8 parts). */
export const ARENAS_KEPT = 64;

export interface PlanRequest {
  id: number;
  template: string;
  /** A NormalizedApplyRequest (structured-cloned). */
  req: unknown;
  /** Send the arena's nodes even if they were sent before (the main thread lost them). */
  resend?: boolean;
}

export type WorkerError = { kind: "llamapeg"; code: LlamapegErrorCode; message: string; where?: string } | { kind: "range" | "other"; message: string };

export interface ArenaData {
  id: number;
  nodes?: readonly PegNode[];
  rules?: ReadonlyMap<string, PegNodeId>;
  root?: PegNodeId;
}

export type PlanReply = { id: number; plan: Omit<AppliedChatPlan, "parser">; arena: ArenaData; grammarChecked: boolean; error?: undefined } | { id: number; error: WorkerError };
