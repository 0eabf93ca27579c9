// The emulator's answers to the APIs that reply with one JSON body: embeddings (OpenAI's
// /v1/embeddings, Ollama's /api/embed) and rerank (/v1/rerank, the Cohere / Jina / vLLM body).
// What a request asked for is parsed here; the timing is the generation routes' load model with
// one event due base + per-token x input tokens after admission (docs/emulator.md, "Embeddings
// and rerank").
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dialect_table.hpp"

namespace pytps {

struct BodyRequest {
    std::string model;
    std::vector<std::string> inputs;  // embeddings: the texts; rerank: the documents
    std::string query;                // rerank
    int64_t dimensions = 0;           // asked for (0: the emulator's default)
    bool base64 = false;              // encoding_format "base64"
    int64_t top_n = -1;               // rerank (-1: every document)
    bool return_documents = false;
};

// Parses `body` for the route `api`; false with `error` set for a 400 in the API's words.
bool parse_body_request(const BodyApiPath& api, std::string_view body, BodyRequest& req, std::string& error);

// Input tokens by the chat routes' rule (ceil(bytes / 4), at least 1) per text: per input for
// embeddings; per (query + document) pair for rerank, since a cross-encoder reads each pair.
std::vector<int64_t> body_input_tokens(const BodyApiPath& api, const BodyRequest& req);

// The truth record's api name: embeddings, ollama_embed, rerank.
const char* body_api_name(const BodyApiPath& api);

// The response body. `dim`: the vector length; `seed`: the emulator's seed (vectors are a
// function of it and each text only); `prompt_tokens`: the usage reported.
std::string body_response(const BodyApiPath& api, const BodyRequest& req, const std::string& id,
                          const std::string& model, int64_t dim, uint64_t seed, int64_t prompt_tokens,
                          int64_t duration_ns);

}  // namespace pytps
