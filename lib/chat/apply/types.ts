import type { PegArena } from "../../peg/arena.js";
import type { ChatPlan } from "../plan.js";

/** A plan from `applyChatTemplate`: its parser is always a PEG arena (the tree `grammar` was exported from). */
export interface AppliedChatPlan extends ChatPlan {
  parser: PegArena;
  /** tool_choice "required" is enforced: an output without a call does not parse (see ChatPlan). */
  toolCallsRequired?: boolean;
}
