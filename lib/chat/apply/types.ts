import type { PegArena } from "../../peg/arena.js";
import type { ChatPlan } from "../plan.js";

/** A plan from `applyChatTemplate`: its parser is always a PEG arena, the tree `grammar` was exported from. */
export interface AppliedChatPlan extends ChatPlan {
  parser: PegArena;
  /** The node of `parser` an eager grammar was exported from (its root, or its calls-only variant); -1 otherwise. */
  grammarRoot: number;
  /** What the grammar does not enforce: dropped schema keywords, tools degraded to any JSON object. */
  warnings: string[];
}
