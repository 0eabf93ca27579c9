// The emulator playing an agent model (docs/emulator.md, "Agents"): a request that offers
// `tools` is answered with tool calls for K turns, then with a final answer. What a turn is,
// which tool results came back and what the calls carry are decided here, from the request
// body alone, so the same conversation gets the same answer whatever the interleaving.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/dialect_table.hpp"

namespace pytps {

// One property of a tool's argument schema (top level of its JSON Schema "properties").
struct ToolProperty {
    std::string name;
    std::string type;        // "string", "integer", "number", "boolean", "array", "object"; "" if none
    std::string enum_first;  // the first value of "enum" as JSON text ("" if none)
    bool required = false;
};

struct ToolDef {
    std::string name;
    std::vector<ToolProperty> properties;
};

// What the conversation says about the agent loop so far.
struct AgentView {
    std::vector<ToolDef> tools;     // the request's tools, in order
    int64_t turn = 0;               // assistant turns with tool calls in the conversation
    // The tool results answering the last of those turns: call id and content bytes.
    std::vector<std::string> result_ids;
    std::vector<int64_t> result_chars;
    std::string task_text;          // the first user message's text (the answer book's second key)
};

// Reads tools, turns and tool results from a generation request body of route `api` (chat
// `tool` messages after an assistant message with `tool_calls`; Responses `function_call` /
// `function_call_output` items, a run of consecutive calls being one turn; Anthropic `tool_use` /
// `tool_result` blocks). A body that does not parse gives an empty view.
AgentView read_agent_view(const ApiPath& api, std::string_view body);

// One tool call of a response: its arguments stream in `pieces` tokens.
struct PlannedCall {
    std::string id;         // call_<seq>[_i] (Anthropic: toolu_<seq>[_i])
    std::string item_id;    // Responses' item id fc_<seq>[_i]
    std::string name;
    std::string arguments;  // JSON text
    bool valid = true;      // false: planted invalid against the tool's schema
    std::vector<size_t> cuts;  // byte offsets where pieces 1.. start (pieces = cuts.size() + 1)
    int64_t pieces() const { return static_cast<int64_t>(cuts.size()) + 1; }
    std::string piece(int64_t j) const;
};

struct AgentSettings {
    int64_t turns = 0;      // K: tool-call turns before the final answer (0: not an agent)
    int64_t calls = 1;      // N: parallel calls per turn
    double invalid = 0.0;   // chance that a call's arguments break its schema
};

// The calls of request `seq` for a turn below K: names drawn from the tools, arguments fit to
// their schema (or planted invalid: the first required property left out, else the first
// property of the wrong type, else an array for the object), each split in about
// `tokens_per_call` pieces (never more than its bytes). Seeded by (seed, seq).
std::vector<PlannedCall> plan_agent_calls(const AgentSettings& a, const std::vector<ToolDef>& tools, uint64_t seed,
                                          uint64_t seq, bool anthropic, int64_t tokens_per_call);

// The legacy single call (EmulatorConfig::tool_calls): {"q": "w w ..."} in `n` tokens.
PlannedCall legacy_call(const std::string& name, uint64_t seq, bool anthropic, int64_t n);

}  // namespace pytps
