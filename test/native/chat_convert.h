// JSON <-> llama.cpp chat structs for the harness requests and answers.
#pragma once

#include "chat.h"
#include "json.h"

// An OpenAI-style request -> common_chat_templates_inputs. Fields: messages, tools, tool_choice
// ("auto" | "required" | "none"), parallel_tool_calls, json_schema (object or text), grammar,
// reasoning_format ("none" | "auto" | "deepseek" | "deepseek-legacy"), enable_thinking,
// chat_template_kwargs (object; each value is passed as its JSON text, as the server does),
// add_generation_prompt, continue_final_message, add_bos, add_eos, force_pure_content, now.
common_chat_templates_inputs chat_inputs_from_json(const common_json & request);

// The message's raw fields: {role, content, content_parts, reasoning_content, tool_calls:
// [{name, arguments, id}], tool_name, tool_call_id}.
common_json chat_msg_to_json(const common_chat_msg & msg);

// Accepts the raw shape above or OpenAI's (tool_calls[i].function.{name, arguments}), without the
// validation of common_chat_msgs_parse_oaicompat (diff inputs are partial messages).
common_chat_msg chat_msg_from_json(const common_json & j);

// {reasoning_content_delta, content_delta, tool_call_index (null = none), tool_call_delta: {name, arguments, id}}
common_json chat_diff_to_json(const common_chat_msg_diff & diff);

common_chat_format chat_format_from_name(const std::string & name);

// The chat parser params of a chat.parse / chat.stream request (see test/support/README.md):
// from template + request (runs templates_apply), from `params`, or from arena/expr.
common_chat_parser_params chat_parser_params_from_request(const common_json & req);
