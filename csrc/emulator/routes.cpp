// HTTP dispatch of the emulator: requests parsed off a connection, routed to the health and
// models answers, the generation endpoints (the core's kApiPaths, one per route) or an error in
// the API's own shape.
#include "core/clock.hpp"
#include "emulator/server.hpp"
#include "emulator/json_write.hpp"

namespace pytps {

void Server::try_requests(Conn& c) {
    const uint64_t id = c.id;
    while (!c.stream && !c.close_after && !c.in.empty()) {
        int status = 0;
        std::string message;
        const uint64_t work_before = c.parser.work();
        const HttpParse r = c.parser.parse(c.in, status, message);
        n_parse_bytes_.fetch_add(c.parser.work() - work_before, std::memory_order_relaxed);
        if (r == HttpParse::need_more) {
            const HttpRequest& partial = c.parser.request();
            if (partial.headers_done && partial.expect_continue && !c.sent_continue) {
                c.sent_continue = true;
                queue(c, "HTTP/1.1 100 Continue\r\n\r\n");
                flush(c);
            }
            return;
        }
        if (r == HttpParse::error) {
            c.in.clear();
            c.parser.reset();
            n_requests_.fetch_add(1, std::memory_order_relaxed);
            send_simple(c, status, error_body(ErrorFamily::openai, status, message), "", false);
            return;
        }
        const int64_t received = now_ns();
        c.request_kernel_ns = c.rx_kernel_ns;  // the read that completed this request
        HttpRequest req = std::move(c.parser.request());
        c.in.erase(0, c.parser.consumed());
        c.parser.reset();
        c.sent_continue = false;
        n_requests_.fetch_add(1, std::memory_order_relaxed);
        handle_request(c, req, received);
        if (!find(id)) return;
    }
}

void Server::send_simple(Conn& c, int status, const std::string& body, const std::string& extra_headers,
                         bool keep_alive, const char* content_type) {
    std::string& h = scratch_;
    h.clear();
    append_status_line(h, status);
    h += "Content-Type: ";
    h += content_type;
    h += "\r\nContent-Length: ";
    json_int(h, static_cast<int64_t>(body.size()));
    h += "\r\n";
    h += extra_headers;
    if (!keep_alive) h += "Connection: close\r\n";
    h += "\r\n";
    h += body;
    queue(c, h);
    if (!keep_alive) c.close_after = true;
    if (!flush(c)) return;
    if (c.close_after && c.out_off >= c.out.size()) close_conn(c);
}

void Server::handle_request(Conn& c, HttpRequest& req, int64_t received_ns) {
    c.keep_alive = req.keep_alive;
    // The API routes take POST alone: another method is a 405 naming it (true: answered so).
    const auto refused_method = [&] {
        if (req.method == "POST") return false;
        send_simple(c, 405, error_body(error_family(req.path), 405, "Method " + req.method + " is not allowed on " + req.path + "; use POST."),
                    "Allow: POST\r\n", req.keep_alive);
        return true;
    };
    if (const ApiPath* api = find_api_path(req.path)) {
        if (!refused_method()) start_generation(c, *api, req, received_ns);
        return;
    }
    if (const BodyApiPath* api = find_body_api_path(req.path)) {
        if (!refused_method()) start_body_api(c, *api, req, received_ns);
        return;
    }
    if (const AudioApiPath* api = find_audio_api_path(req.path)) {
        if (req.method != "POST") {
            send_simple(c, 405, error_body(ErrorFamily::openai, 405, "Method " + req.method + " is not allowed on " + req.path + "; use POST."),
                        "Allow: POST\r\n", req.keep_alive);
            return;
        }
        start_audio(c, *api, req, received_ns);
        return;
    }
    if (req.path == "/metrics") {
        serve_metrics(c, req);
        return;
    }
    if (req.path == "/reset_prefix_cache") {
        // vLLM's route: every cached prompt block is forgotten, so the next prompts start cold.
        if (req.method != "POST") {
            send_simple(c, 405, error_body(ErrorFamily::openai, 405, "Method " + req.method + " is not allowed on " + req.path + "; use POST."),
                        "Allow: POST\r\n", req.keep_alive);
            return;
        }
        prefix_cache_.clear();
        n_prefix_resets_.fetch_add(1, std::memory_order_relaxed);
        send_simple(c, 200, "{\"status\":\"ok\"}", "", req.keep_alive);
        return;
    }
    if (req.path == "/health" || req.path == "/v1/models") {
        if (req.method != "GET") {
            send_simple(c, 405, error_body(ErrorFamily::openai, 405, "Method " + req.method + " is not allowed on " + req.path + "; use GET."),
                        "Allow: GET\r\n", req.keep_alive);
            return;
        }
        std::string body;
        if (req.path == "/health") {
            body = "{\"status\":\"ok\"}";
        } else {
            body = "{\"object\":\"list\",\"data\":[{\"id\":";
            json_str(body, cfg_.model);
            body += ",\"object\":\"model\",\"created\":0,\"owned_by\":\"pytps\"}]}";
        }
        send_simple(c, 200, body, "", req.keep_alive);
        return;
    }
    send_simple(c, 404, error_body(error_family(req.path), 404, "Invalid URL (" + req.method + " " + req.path + ")"), "",
                req.keep_alive);
}

}  // namespace pytps
