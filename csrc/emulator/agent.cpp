#include "emulator/agent.hpp"

#include <initializer_list>
#include <utility>

#include "core/json_scan.hpp"
#include "emulator/formats.hpp"
#include "emulator/json_write.hpp"
#include "emulator/schedule.hpp"

namespace pytps {

namespace {

using json::JsonReader;
using json::Type;

// Appends every string under the current value (keys excluded) to `out`.
void strings_of(JsonReader& r, std::string& out) {
    switch (r.peek()) {
        case Type::String: r.read_string(out); return;
        case Type::Array:
            if (!r.begin_array()) return;
            while (r.next_element()) strings_of(r, out);
            return;
        case Type::Object: {
            if (!r.begin_object()) return;
            std::string_view k;
            while (r.next_key(k)) strings_of(r, out);
            return;
        }
        default: r.skip_value();
    }
}

bool read_str(JsonReader& r, std::string& out) {
    out.clear();
    if (r.peek() == Type::String) return r.read_string(out);
    r.skip_value();
    return false;
}

// When key is one of `fields`' keys, reads the member's value into that key's string (as
// read_str) and returns true; false, reading nothing, for any other key.
bool read_listed(JsonReader& r, std::string_view key,
                 std::initializer_list<std::pair<std::string_view, std::string*>> fields) {
    for (const auto& [name, out] : fields) {
        if (key == name) {
            read_str(r, *out);
            return true;
        }
    }
    return false;
}

// One property's schema: its type (the first that is not "null" when a list) and first enum value.
void read_property(JsonReader& r, ToolProperty& p) {
    json::each_member(r, [&](std::string_view k) {
        if (k == "type" && r.peek() == Type::String) {
            r.read_string(p.type);
        } else if (k == "type" && r.peek() == Type::Array) {
            r.begin_array();
            while (r.next_element()) {
                std::string t;
                if (read_str(r, t) && t != "null" && p.type.empty()) p.type = t;
            }
        } else if (k == "enum" && r.peek() == Type::Array) {
            r.begin_array();
            bool first = true;
            while (r.next_element()) {
                if (!first) {
                    r.skip_value();
                    continue;
                }
                first = false;
                std::string s;
                int64_t i = 0;
                bool b = false;
                if (r.peek() == Type::String && r.read_string(s)) {
                    json_str(p.enum_first, s);
                } else if (r.read_int(i)) {
                    json_int(p.enum_first, i);
                } else if (r.read_bool(b)) {
                    p.enum_first = b ? "true" : "false";
                } else {
                    r.skip_value();
                }
            }
        } else {
            r.skip_value();
        }
    });
}

void read_schema(JsonReader& r, ToolDef& t) {
    std::vector<std::string> required;
    json::each_member(r, [&](std::string_view k) {
        if (k == "properties" && r.peek() == Type::Object) {
            r.begin_object();
            std::string_view name;
            while (r.next_key(name)) {
                ToolProperty p;
                p.name = std::string(name);
                read_property(r, p);
                t.properties.push_back(std::move(p));
            }
        } else if (k == "required" && r.peek() == Type::Array) {
            r.begin_array();
            while (r.next_element()) {
                std::string s;
                if (read_str(r, s)) required.push_back(s);
            }
        } else {
            r.skip_value();
        }
    });
    for (auto& p : t.properties)
        for (const auto& q : required)
            if (p.name == q) p.required = true;
}

// Chat / Ollama {"type":"function","function":{"name","parameters"}}, Responses {"name",
// "parameters"}, Anthropic {"name","input_schema"}.
void read_tools(JsonReader& r, std::vector<ToolDef>& tools) {
    json::each_object(r, [&] {
        ToolDef t;
        json::each_member(r, [&](std::string_view k) {
            if (k == "name") {
                read_str(r, t.name);
            } else if (k == "parameters" || k == "input_schema") {
                read_schema(r, t);
            } else if (k == "function") {
                json::each_member(r, [&](std::string_view fk) {
                    if (fk == "name") {
                        read_str(r, t.name);
                    } else if (fk == "parameters") {
                        read_schema(r, t);
                    } else {
                        r.skip_value();
                    }
                });
            } else {
                r.skip_value();
            }
        });
        if (!t.name.empty()) tools.push_back(std::move(t));
    });
}

void new_turn(AgentView& v) {
    ++v.turn;
    v.result_ids.clear();
    v.result_chars.clear();
}

void add_result(AgentView& v, std::string id, int64_t chars) {
    v.result_ids.push_back(std::move(id));
    v.result_chars.push_back(chars);
}

// Chat Completions (and Ollama chat): {"role", "content", "tool_calls", "tool_call_id"}.
void read_chat_messages(JsonReader& r, AgentView& v) {
    json::each_object(r, [&] {
        std::string role, call_id, text;
        bool has_calls = false;
        json::each_member(r, [&](std::string_view k) {
            if (read_listed(r, k, {{"role", &role}, {"tool_call_id", &call_id}})) return;
            if (k == "content") {
                strings_of(r, text);
            } else if (k == "tool_calls" && r.peek() == Type::Array) {
                r.begin_array();
                while (r.next_element()) {
                    has_calls = true;
                    r.skip_value();
                }
            } else {
                r.skip_value();
            }
        });
        if (role == "assistant" && has_calls) new_turn(v);
        if (role == "tool") add_result(v, call_id, static_cast<int64_t>(text.size()));
        if (role == "user" && v.task_text.empty()) v.task_text = text;
    });
}

// Responses input items: a run of function_call items (reasoning items between them included)
// is one turn, as a response's output is sent back whole before the outputs of its calls.
void read_responses_input(JsonReader& r, AgentView& v) {
    if (r.peek() == Type::String) {
        r.read_string(v.task_text);
        return;
    }
    bool in_run = false;
    json::each_object(r, [&] {
        std::string type, role, call_id, text;
        json::each_member(r, [&](std::string_view k) {
            if (read_listed(r, k, {{"type", &type}, {"role", &role}, {"call_id", &call_id}})) return;
            if (k == "output" || k == "content") {
                strings_of(r, text);
            } else {
                r.skip_value();
            }
        });
        if (type == "function_call") {
            if (!in_run) new_turn(v);
            in_run = true;
        } else if (type == "function_call_output") {
            add_result(v, call_id, static_cast<int64_t>(text.size()));
            in_run = false;
        } else if (type != "reasoning") {
            in_run = false;
            if (role == "user" && v.task_text.empty()) v.task_text = text;
        }
    });
}

// One content block of an Anthropic message: a tool_use block marks the message as calling
// tools; a tool_result block answers a call; any other block's strings are the message's text.
void read_anthropic_block(JsonReader& r, std::string& text, bool& has_calls,
                          std::vector<std::pair<std::string, int64_t>>& results) {
    std::string type, use_id, block_text;
    json::each_member(r, [&](std::string_view k) {
        if (read_listed(r, k, {{"type", &type}, {"tool_use_id", &use_id}})) return;
        if (k == "text" || k == "content") {
            strings_of(r, block_text);
        } else {
            r.skip_value();
        }
    });
    if (type == "tool_use") has_calls = true;
    if (type == "tool_result") {
        results.emplace_back(use_id, static_cast<int64_t>(block_text.size()));
    } else {
        text += block_text;
    }
}

// Anthropic messages: content a string or blocks; tool_use blocks in an assistant message make
// a turn, tool_result blocks in a user message answer it.
void read_anthropic_messages(JsonReader& r, AgentView& v) {
    json::each_object(r, [&] {
        std::string role, text;
        bool has_calls = false;
        std::vector<std::pair<std::string, int64_t>> results;
        json::each_member(r, [&](std::string_view k) {
            if (k == "role") {
                read_str(r, role);
            } else if (k == "content" && r.peek() == Type::Array) {
                r.begin_array();
                while (r.next_element()) {
                    if (r.peek() == Type::Object) {
                        read_anthropic_block(r, text, has_calls, results);
                    } else {
                        strings_of(r, text);
                    }
                }
            } else if (k == "content") {
                strings_of(r, text);
            } else {
                r.skip_value();
            }
        });
        if (role == "assistant" && has_calls) new_turn(v);
        for (auto& [id, n] : results) add_result(v, id, n);
        if (role == "user" && results.empty() && v.task_text.empty()) v.task_text = text;
    });
}

const char* const kArgWords[] = {"alpha", "beta", "gamma", "delta", "main", "src", "test", "data"};

std::string value_for(const ToolProperty& p, std::mt19937_64& rng) {
    if (!p.enum_first.empty()) return p.enum_first;
    std::string out;
    if (p.type == "integer") {
        json_int(out, static_cast<int64_t>(rng() % 100));
    } else if (p.type == "number") {
        json_int(out, static_cast<int64_t>(rng() % 100));
        out += ".5";
    } else if (p.type == "boolean") {
        out = (rng() & 1) ? "true" : "false";
    } else if (p.type == "array") {
        out = "[]";
    } else if (p.type == "object") {
        out = "{}";
    } else {
        std::string s = kArgWords[rng() % 8];
        s += " ";
        s += kArgWords[rng() % 8];
        json_str(out, s);
    }
    return out;
}

// A value of the wrong type for `p` (an enum refuses any value outside it).
std::string wrong_value_for(const ToolProperty& p) {
    if (p.type == "string" || (p.type.empty() && !p.enum_first.empty() && p.enum_first[0] == '"')) return "12345";
    if (p.type.empty() && !p.enum_first.empty()) return "\"not-in-enum\"";
    return "\"not a " + (p.type.empty() ? std::string("value") : p.type) + "\"";
}

std::string arguments_for(const ToolDef* t, bool invalid, std::mt19937_64& rng) {
    if (!t || t->properties.empty()) return invalid ? "[]" : "{}";
    size_t drop = t->properties.size(), wrong = t->properties.size();
    if (invalid) {
        for (size_t i = 0; i < t->properties.size() && drop == t->properties.size(); ++i)
            if (t->properties[i].required) drop = i;
        if (drop == t->properties.size()) wrong = 0;
    }
    std::string out = "{";
    bool comma = false;
    for (size_t i = 0; i < t->properties.size(); ++i) {
        if (i == drop) continue;
        if (comma) out += ", ";
        comma = true;
        json_str(out, t->properties[i].name);
        out += ": ";
        out += i == wrong ? wrong_value_for(t->properties[i]) : value_for(t->properties[i], rng);
    }
    out += "}";
    return out;
}

// Cuts `s` into about `want` pieces of equal bytes, never inside a UTF-8 sequence.
std::vector<size_t> cuts_for(const std::string& s, int64_t want) {
    std::vector<size_t> cuts;
    const size_t len = s.size();
    const int64_t n = std::max<int64_t>(1, std::min<int64_t>(want, static_cast<int64_t>(len)));
    for (int64_t j = 1; j < n; ++j) {
        size_t c = static_cast<size_t>(static_cast<double>(len) * static_cast<double>(j) / static_cast<double>(n));
        while (c < len && (static_cast<unsigned char>(s[c]) & 0xC0) == 0x80) ++c;
        if (c == 0 || c >= len || (!cuts.empty() && c <= cuts.back())) continue;
        cuts.push_back(c);
    }
    return cuts;
}

std::string call_suffix(uint64_t seq, size_t i) {
    std::string s = std::to_string(seq);
    if (i > 0) s += "_" + std::to_string(i);
    return s;
}

}  // namespace

std::string PlannedCall::piece(int64_t j) const {
    const size_t a = j == 0 ? 0 : cuts[static_cast<size_t>(j - 1)];
    const size_t b = static_cast<size_t>(j) < cuts.size() ? cuts[static_cast<size_t>(j)] : arguments.size();
    return arguments.substr(a, b - a);
}

AgentView read_agent_view(const ApiPath& api, std::string_view body) {
    AgentView v;
    JsonReader r(body);
    if (r.peek() != Type::Object || !r.begin_object()) return v;
    std::string_view key;
    while (r.next_key(key)) {
        if (key == "tools") {
            read_tools(r, v.tools);
        } else if (key == "messages" && r.peek() == Type::Array) {
            if (api.dialect == Dialect::Anthropic) {
                read_anthropic_messages(r, v);
            } else {
                read_chat_messages(r, v);
            }
        } else if (key == "input" && api.dialect == Dialect::OpenAIResponses) {
            read_responses_input(r, v);
        } else {
            r.skip_value();
        }
    }
    return v;
}

std::vector<PlannedCall> plan_agent_calls(const AgentSettings& a, const std::vector<ToolDef>& tools, uint64_t seed,
                                          uint64_t seq, bool anthropic, int64_t tokens_per_call) {
    std::mt19937_64 rng = request_rng(seed ^ 0xA6E475EEDULL, seq);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<PlannedCall> calls;
    for (int64_t i = 0; i < a.calls; ++i) {
        PlannedCall c;
        const std::string sfx = call_suffix(seq, static_cast<size_t>(i));
        c.id = (anthropic ? "toolu_" : "call_") + sfx;
        c.item_id = "fc_" + sfx;
        const ToolDef* t = tools.empty() ? nullptr : &tools[rng() % tools.size()];
        c.name = t ? t->name : "get_weather";
        c.valid = !(a.invalid > 0.0 && u(rng) < a.invalid);
        c.arguments = arguments_for(t, !c.valid, rng);
        c.cuts = cuts_for(c.arguments, tokens_per_call);
        calls.push_back(std::move(c));
    }
    return calls;
}

PlannedCall legacy_call(const std::string& name, uint64_t seq, bool anthropic, int64_t n) {
    PlannedCall c;
    const std::string sfx = std::to_string(seq);
    c.id = (anthropic ? "toolu_" : "call_") + sfx;
    c.item_id = "fc_" + sfx;
    c.name = name;
    for (int64_t i = 0; i < n; ++i) {
        if (i > 0) c.cuts.push_back(c.arguments.size());
        c.arguments += token_piece(TokKind::tool, i, n);
    }
    return c;
}

}  // namespace pytps
