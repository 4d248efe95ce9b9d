/**
 * The probe vocabulary: distinctive needles (so a rendered needle is found and nothing else is
 * mistaken for it), the two probe tools, and the conversations the analysis renders. Needles and
 * shapes follow the reference so both analyses see the same renderings.
 */
export const FUN_FIRST = "FFF_FIRST_FUN_F";
export const FUN_SECOND = "SSS_SECOND_FUN_S";
export const ARG_FIRST = "AA_ARG_FST_AA";
export const ARG_SECOND = "BB_ARG_SND_BB";
export const USER_MSG = "U_USER_MSG Hello END_U";
export const USER_MSG_TWO = "V_USER_MSG Hello END_V";
export const ASSISTANT_MSG = "A_ASST_MSG I can help END_A";
export const THINKING_CONTENT = "REASON_PART I am thinking END_R";
export const CALL_ID_001 = "call00001";
export const CALL_ID_002 = "call00002";
export const CALL_ID_999 = "call99999";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const paramsSchema = {
  type: "object",
  properties: {
    [ARG_FIRST]: { type: "string", description: "First argument" },
    [ARG_SECOND]: { type: "string", description: "Second argument" },
  },
  required: [],
};

export const PROBE_TOOLS: Json[] = [
  { type: "function", function: { name: FUN_FIRST, description: "Test function foo", parameters: paramsSchema } },
  { type: "function", function: { name: FUN_SECOND, description: "Test function bar", parameters: paramsSchema } },
];

export function toolCall(name: string, args: Record<string, string>, id = CALL_ID_001): Json {
  return { id, type: "function", function: { name, arguments: args } };
}

export const userMsg: Json = { role: "user", content: USER_MSG };
export const userMsgTwo: Json = { role: "user", content: USER_MSG_TWO };
export const assistantMsg: Json = { role: "assistant", content: ASSISTANT_MSG };

/** An assistant turn with tool calls and empty content (as the reference builds them). */
export function assistantCalls(...calls: Json[]): Json {
  return { role: "assistant", content: "", tool_calls: calls };
}

export const firstCallZeroArgs = toolCall(FUN_FIRST, {});
export const firstCallOneArg = toolCall(FUN_FIRST, { [ARG_FIRST]: "XXXX" });
export const firstCallOneArgOtherVal = toolCall(FUN_FIRST, { [ARG_FIRST]: "YYYY" });
export const firstCallOtherArg = toolCall(FUN_FIRST, { [ARG_SECOND]: "YYYY" });
export const firstCall = toolCall(FUN_FIRST, { [ARG_FIRST]: "XXXX", [ARG_SECOND]: "YYYY" });
export const secondCall = toolCall(FUN_SECOND, { [ARG_FIRST]: "XXXX", [ARG_SECOND]: "YYYY" }, CALL_ID_002);
export const firstCallAltId = toolCall(FUN_FIRST, { [ARG_FIRST]: "XXXX", [ARG_SECOND]: "YYYY" }, CALL_ID_999);
