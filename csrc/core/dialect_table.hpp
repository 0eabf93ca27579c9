// The API dialects pytps speaks, by name, and where each one's generation requests go: the one
// table that the stream recorder, the client side (through the bindings: pytps.DIALECTS,
// _core.DIALECT_PATHS) and the emulator's routes all read. Light on purpose: names and paths
// only, no JSON or stream state, so the emulator can route on it.
#pragma once

#include <string>
#include <string_view>

namespace pytps {

// Json is not a stream: the whole body is one JSON document (embeddings, rerank, "stream":
// false), kept by the recorder for Python to read once it has ended. It is not a generation API,
// so it is not in kAllDialects.
//
// The audio dialects (core/audio_body.hpp, dialect_audio.cpp) are not generation APIs either:
// SpeechPcm and SpeechWav read a raw audio body, every read one event carrying its audio bytes
// (a WAV header's bytes are not audio); SpeechSse reads OpenAI's speech.audio.delta events;
// Transcription reads OpenAI's transcript.text.delta/done events and vLLM's chat-style deltas.
// SpeechCoded reads a compressed audio body (mp3, opus, aac, flac): every read one event carrying
// its bytes, and the body kept whole, for Python's decoder to turn into seconds (pytps.measure.audio_codec).
enum class Dialect {
    OpenAIChat,
    OpenAICompletions,
    OpenAIResponses,
    Anthropic,
    Ollama,
    Json,
    SpeechPcm,
    SpeechWav,
    SpeechSse,
    Transcription,
    SpeechCoded
};

constexpr Dialect kAudioDialects[] = {Dialect::SpeechPcm, Dialect::SpeechWav, Dialect::SpeechSse,
                                      Dialect::Transcription, Dialect::SpeechCoded};
// A raw body whose every read is audio (after a WAV header): no framing at all.
inline bool dialect_is_raw_audio(Dialect d) {
    return d == Dialect::SpeechPcm || d == Dialect::SpeechWav || d == Dialect::SpeechCoded;
}

constexpr Dialect kAllDialects[] = {Dialect::OpenAIChat, Dialect::OpenAICompletions, Dialect::OpenAIResponses,
                                    Dialect::Anthropic, Dialect::Ollama};

const char* dialect_name(Dialect d);
// "openai-chat, openai-completions, ..." for error messages.
std::string dialect_list();
bool parse_dialect(std::string_view name, Dialect& out);
// True for dialects framed as Server-Sent Events; Ollama is newline-delimited JSON.
inline bool dialect_uses_sse(Dialect d) {
    return d != Dialect::Ollama && d != Dialect::Json && !dialect_is_raw_audio(d);
}

// Where each dialect's generation requests go, below the server's root. A dialect's first path
// is its default (pytps's requests); Ollama has two, /api/chat and /api/generate, whose streams
// speak the same dialect.
struct ApiPath {
    const char* path;
    Dialect dialect;
    bool takes_prompt;  // the request carries a prompt string, not a list of messages
};

constexpr ApiPath kApiPaths[] = {
    {"/v1/chat/completions", Dialect::OpenAIChat, false},
    {"/v1/completions", Dialect::OpenAICompletions, true},
    {"/v1/responses", Dialect::OpenAIResponses, false},
    {"/v1/messages", Dialect::Anthropic, false},
    {"/api/chat", Dialect::Ollama, false},
    {"/api/generate", Dialect::Ollama, true},
};

// The entry of exactly this path, or null.
const ApiPath* find_api_path(std::string_view path);

// An entry of the body and audio API tables below: pytps's --api name, the path, and which API.
template <class Api>
struct NamedApiPath {
    const char* name;
    const char* path;
    Api api;
};

// The APIs that answer with one JSON body, never a stream (read through Dialect::Json): their
// names (pytps's --api) and paths, for the client (_core.BODY_API_PATHS) and the emulator's routes.
enum class BodyApi { OpenAIEmbeddings, OllamaEmbed, Rerank };
using BodyApiPath = NamedApiPath<BodyApi>;

constexpr BodyApiPath kBodyApiPaths[] = {
    {"openai-embeddings", "/v1/embeddings", BodyApi::OpenAIEmbeddings},
    {"ollama-embed", "/api/embed", BodyApi::OllamaEmbed},
    {"rerank", "/v1/rerank", BodyApi::Rerank},
};

// The entry of exactly this path, or null.
const BodyApiPath* find_body_api_path(std::string_view path);

// The audio APIs (pytps's --api): text to speech and speech to text, for the client
// (_core.AUDIO_API_PATHS) and the emulator's routes.
enum class AudioApi { Speech, Transcriptions };
using AudioApiPath = NamedApiPath<AudioApi>;

constexpr AudioApiPath kAudioApiPaths[] = {
    {"openai-speech", "/v1/audio/speech", AudioApi::Speech},
    {"openai-transcriptions", "/v1/audio/transcriptions", AudioApi::Transcriptions},
};

// The entry of exactly this path, or null.
const AudioApiPath* find_audio_api_path(std::string_view path);

}  // namespace pytps
