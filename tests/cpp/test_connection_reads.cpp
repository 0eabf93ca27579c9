// Table tests of pytps::Connection: reading responses. Splits at every byte, early responses,
// stale keep-alive connections, EOF and resets, framing that forbids reuse, the size cap,
// kernel stamps. Part of the program tests/cpp/test_connection.cpp's main() runs.
#include "connection_harness.hpp"

namespace harness {
namespace {

using K = Outcome::Kind;

// Opens c and reads one whole response on it: c is then idle and reused.
void first_response(Env& e, Connection& c) {
    e.ops.recvs = {bytes(sse_response(1).bytes)};
    e.open(c, job(request()));
    CHECK_EQ(e.pump(c).kind, K::completed_keep);
    c.take_job();
}

// A response split in two at every byte boundary: each event carries the stamp of the read that
// completed it, the head that of the read that ended it, and the state says which part is read.
void response_split_at_every_byte() {
    const int64_t t1 = 2'000'000'000, t2 = 3'000'000'000;
    for (bool chunked : {true, false}) {
        const Response r = sse_response(3, chunked);
        for (size_t k = 1; k < r.bytes.size(); ++k) {
            Env e;
            auto c = e.make();
            e.ops.recvs = {bytes(r.bytes.substr(0, k), t1)};
            e.open(*c, job(request()));
            CHECK_EQ(e.pump(*c).kind, K::pending);
            CHECK_EQ(c->state(), k >= r.head_end ? ConnState::reading_body : ConnState::reading_head);
            e.ops.recvs = {bytes(r.bytes.substr(k), t2)};
            const Outcome o = e.pump(*c);
            CHECK_EQ(o.kind, K::completed_keep);
            CHECK_EQ(o.t_ns, t2);
            CHECK_EQ(e.trace(), std::string("connecting>writing>reading_head>reading_body>idle"));
            std::vector<int64_t> want;
            for (size_t end : r.event_ends) want.push_back(end <= k ? t1 : t2);
            CHECK_EQ(c->job()->http->recorder().output_times_ns(), want);
            CHECK_EQ(c->job()->http->t_headers_ns(), r.head_end <= k ? t1 : t2);
        }
    }
}

void response_one_byte_per_read() {
    const Response r = sse_response(3);
    const int64_t base = 5'000'000'000, step = 10'000;
    Env e;
    for (size_t i = 0; i < r.bytes.size(); ++i) e.ops.recvs.push_back(bytes(r.bytes.substr(i, 1), base + step * int64_t(i)));
    auto c = e.make();
    e.open(*c, job(request()));
    CHECK_EQ(e.pump(*c).kind, K::completed_keep);
    std::vector<int64_t> want;
    for (size_t end : r.event_ends) want.push_back(base + step * int64_t(end - 1));
    CHECK_EQ(c->job()->http->recorder().output_times_ns(), want);
    CHECK_EQ(c->job()->http->t_headers_ns(), base + step * int64_t(r.head_end - 1));
    CHECK_EQ(e.reads.load(), uint64_t(r.bytes.size()));
}

// The buffer fills: the connection reads again at once instead of waiting for epoll.
void full_buffer_reads_again() {
    Env e(16);
    const Response r = sse_response(2);
    e.ops.recvs = {bytes(r.bytes)};
    auto c = e.make();
    e.open(*c, job(request()));
    CHECK_EQ(e.pump(*c).kind, K::completed_keep);
    CHECK_EQ(e.ops.reads.size(), (r.bytes.size() + 15) / 16);
}

// The server answers (413) while the request is still being written and stops reading: the
// response is recorded, and the connection is closed though the response allows keep-alive,
// since the server was left in the middle of a request.
void early_response_is_recorded_and_not_kept() {
    const std::string answer = "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 9\r\n\r\ntoo large";
    Env e;
    e.ops.sends = {take(100), blocked()};
    e.ops.recvs = {bytes(answer, 2'000'000'000)};
    auto c = e.make();
    e.open(*c, job(request(5000)));
    const Outcome o = e.pump(*c);
    CHECK_EQ(o.kind, K::completed_close);
    CHECK_EQ(o.t_ns, int64_t(2'000'000'000));
    CHECK_EQ(e.trace(), std::string("connecting>writing>closed"));
    CHECK_EQ(e.ops.written.size(), size_t(100));
    const ClientJob& j = *c->job();
    CHECK_EQ(j.t_send_ns, ClientJob::kNoTime);
    CHECK_EQ(j.http->parser().status(), 413);
    CHECK(j.http->parser().message_done());
    CHECK_EQ(j.http->error_body(), std::string("too large"));

    // The same answer after the whole request went out keeps the connection.
    Env full;
    full.ops.recvs = {bytes(answer)};
    auto d = full.make();
    full.open(*d, job(request(5000)));
    CHECK_EQ(full.pump(*d).kind, K::completed_keep);
}

// The head arrives while the request is still going out; then the request finishes: writing
// goes straight to reading_body, and the connection may be kept.
void early_head_then_request_finishes() {
    const Response r = sse_response(2);
    Env e;
    e.ops.sends = {take(7), blocked()};
    e.ops.recvs = {bytes(r.bytes.substr(0, r.head_end))};
    auto c = e.make();
    e.open(*c, job(request()));
    CHECK_EQ(e.pump(*c).kind, K::pending);
    CHECK_EQ(c->state(), ConnState::writing);
    CHECK(c->job()->http->parser().headers_done());
    e.ops.sends.clear();
    e.ops.recvs = {bytes(r.bytes.substr(r.head_end))};
    CHECK_EQ(e.pump(*c).kind, K::completed_keep);
    CHECK_EQ(e.trace(), std::string("connecting>writing>reading_body>idle"));
    CHECK_EQ(e.ops.written, request());
}

// A kept-alive connection the server had closed: EOF or a reset before any response byte, or a
// failed send, sends the request again (the engine puts it on a new connection); if the new
// connection ends the same way, it fails with class no_response, and says it was a resend.
void stale_keep_alive_is_sent_again() {
    struct Row {
        const char* name;
        Recv recv;
        Send send;
        const char* path;
    };
    const Row rows[] = {
        {"eof", eof(), take(), "idle>writing>reading_head>closed"},
        {"reset", recv_error(ECONNRESET), take(), "idle>writing>reading_head>closed"},
        {"send", again_recv(), send_error(EPIPE), "idle>writing>closed"},
    };
    for (const Row& row : rows) {
        current_test = row.name;
        Env e;
        auto c = e.make();
        first_response(e, *c);
        e.ops.recvs = {row.recv};
        e.ops.sends = {row.send};
        Outcome o = c->start(job(request(), 2));
        if (!o.ended()) o = e.pump(*c);
        CHECK_EQ(o.kind, K::retry_stale);
        CHECK_HAS(e.trace(), row.path);
        auto retried = c->take_job();
        CHECK_EQ(retried->retries, 1);
        CHECK_EQ(retried->t_send_ns, ClientJob::kNoTime);
        CHECK(retried->http->parser().status() == 0 && !retried->http->parser().failed());  // nothing recorded
        CHECK_EQ(retried->connect_start_ns, ClientJob::kNoTime);  // the resend's connect is its own

        // The resend, on a new connection, meets the same: this time the request fails.
        Env f;
        f.ops.recvs = {row.recv};
        f.ops.sends = {row.send};
        auto d = f.make(2);
        o = f.open(*d, std::move(retried));
        if (!o.ended()) o = f.pump(*d);
        CHECK_EQ(o.kind, K::failed);
        CHECK_EQ(std::string(d->error_class()), std::string("no_response"));
        CHECK_HAS(d->take_error_detail(), "sent again after a kept-alive connection was found closed");
        CHECK_EQ(d->job()->retries, 1);
        CHECK(d->job()->connect_ns > 0);
    }
    current_test = "stale_keep_alive_is_sent_again";
}

// EOF or a reset before any response byte on a new connection is no stale connection: it is
// reported, as no_response.
void eof_before_response_on_new_connection() {
    struct Row {
        Recv end;
        const char* detail;
    };
    const Row rows[] = {
        {eof(2'000'000'000), "no byte of a response came: the server closed the connection"},
        {recv_error(ECONNRESET, 2'000'000'000), "no byte of a response came: the connection failed: Connection reset by peer"},
    };
    for (const Row& row : rows) {
        Env e;
        e.ops.recvs = {row.end};
        auto c = e.make();
        e.open(*c, job(request()));
        const Outcome o = e.pump(*c);
        CHECK_EQ(o.kind, K::failed);
        CHECK_EQ(o.t_ns, int64_t(2'000'000'000));
        CHECK_EQ(std::string(c->error_class()), std::string("no_response"));
        CHECK_EQ(c->take_error_detail(), std::string(row.detail));
        CHECK_EQ(e.trace(), std::string("connecting>writing>reading_head>failed"));
        CHECK(c->job()->http->parser().closed_early());
        CHECK_EQ(c->job()->retries, 0);
    }
}

// The server answers (413) and resets the connection while the request is still going out: the
// send fails, and the answer it left in the socket is read and recorded, not lost. Cut short by
// the reset, what came of it is recorded as truncated.
void send_fails_after_an_early_answer() {
    const std::string answer = "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 9\r\n\r\ntoo large";
    for (bool whole : {true, false}) {
        Env e;
        e.ops.sends = {take(100), send_error(ECONNRESET)};
        e.ops.recvs = {bytes(whole ? answer : answer.substr(0, 40), 2'000'000'000), recv_error(ECONNRESET)};
        auto c = e.make();
        e.open(*c, job(request(5000)));
        const Outcome o = e.pump(*c);
        CHECK_EQ(o.kind, K::completed_close);
        CHECK_EQ(e.trace(), std::string("connecting>writing>closed"));
        const ClientJob& j = *c->job();
        CHECK_EQ(j.http->parser().status(), 413);
        CHECK_EQ(j.http->parser().message_done(), whole);
        CHECK_EQ(j.http->parser().closed_early(), !whole);
        CHECK_EQ(e.ops.written.size(), size_t(100));
    }
}

// The connection ends mid-body (EOF or reset): what came is kept, the recorder says truncated,
// the request ends at the EOF's stamp; mid-head likewise. A close-delimited body ends there.
void connection_ends_early() {
    const Response r = sse_response(3);
    struct Row {
        const char* name;
        std::string part;
        Recv end;
        const char* path;
        bool complete;
    };
    const std::string close_delimited = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + std::string(kEvent);
    const Row rows[] = {
        {"eof mid body", r.bytes.substr(0, r.event_ends[1]), eof(9'000'000'000), "reading_body>closed", false},
        {"reset mid body", r.bytes.substr(0, r.event_ends[1]), recv_error(ECONNRESET, 9'000'000'000),
         "reading_body>closed", false},
        {"eof mid head", r.bytes.substr(0, r.head_end - 3), eof(9'000'000'000), "reading_head>closed", false},
        {"close-delimited", close_delimited, eof(9'000'000'000), "reading_body>closed", true},
    };
    for (const Row& row : rows) {
        current_test = row.name;
        Env e;
        e.ops.recvs = {bytes(row.part, 2'000'000'000), row.end};
        auto c = e.make();
        e.open(*c, job(request()));
        const Outcome o = e.pump(*c);
        CHECK_EQ(o.kind, K::completed_close);
        CHECK_EQ(o.t_ns, int64_t(9'000'000'000));
        CHECK_HAS(e.trace(), row.path);
        const HttpStreamRecorder& h = *c->job()->http;
        CHECK_EQ(h.parser().message_done(), row.complete);
        CHECK_EQ(h.parser().closed_early(), !row.complete);
        CHECK_EQ(h.recorder().end_ns(), int64_t(9'000'000'000));
        if (std::string(row.name) != "eof mid head")
            CHECK_EQ(h.recorder().output_times_ns().size(), size_t(row.complete ? 1 : 2));
    }
    current_test = "connection_ends_early";
}

// What forbids reuse though the response ended: bytes after it, Connection: close, a broken head.
void responses_that_end_the_connection() {
    const Response r = sse_response(1);
    struct Row {
        const char* name;
        std::string bytes;
        const char* path;
    };
    const Row rows[] = {
        {"bytes after the response", r.bytes + "HTTP/1.1 200 OK\r\n", "reading_body>closed"},
        {"connection: close", "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n", "reading_body>closed"},
        {"broken head", "HTTP/1.1 abc\r\n\r\n", "reading_head>closed"},
    };
    for (const Row& row : rows) {
        current_test = row.name;
        Env e;
        e.ops.recvs = {bytes(row.bytes)};
        auto c = e.make();
        e.open(*c, job(request()));
        const Outcome o = e.pump(*c);
        CHECK_EQ(o.kind, K::completed_close);
        CHECK_EQ(std::string(c->error_class()), std::string(""));  // the recorder tells what went wrong
        CHECK_HAS(e.trace(), row.path);
    }
    current_test = "responses_that_end_the_connection";
}

void response_larger_than_the_cap() {
    const Response r = sse_response(3);
    Env e;
    e.opt.max_response_bytes = r.head_end + 10;
    e.ops.recvs = {bytes(r.bytes.substr(0, r.head_end), 2'000'000'000), bytes(r.bytes.substr(r.head_end), 3'000'000'000)};
    auto c = e.make();
    e.open(*c, job(request()));
    const Outcome o = e.pump(*c);
    CHECK_EQ(o.kind, K::failed);
    CHECK_EQ(std::string(c->error_class()), std::string("client"));
    CHECK_EQ(c->take_error_detail(), "the response is larger than max_response_bytes (" + std::to_string(r.head_end + 10) + ")");
    CHECK_EQ(o.t_ns, int64_t(3'000'000'000));
    CHECK_EQ(e.trace(), std::string("connecting>writing>reading_head>reading_body>failed"));
}

// With kernel stamps each read keeps (its own stamp, the kernel's moved onto CLOCK_MONOTONIC).
void kernel_stamps_pair_each_read() {
    const Response r = sse_response(2);
    Env e;
    e.opt.kernel_timestamps = true;
    e.ops.kernel_lag = 3'000;
    e.ops.recvs = {bytes(r.bytes.substr(0, 50), 2'000'000'000), bytes(r.bytes.substr(50), 2'500'000'000)};
    auto c = e.make();
    e.open(*c, job(request()));
    CHECK_EQ(e.pump(*c).kind, K::completed_keep);
    CHECK_EQ(c->job()->recv_ns, (std::vector<int64_t>{2'000'000'000, 2'500'000'000}));
    CHECK_EQ(c->job()->recv_kernel_ns, (std::vector<int64_t>{1'999'997'000, 2'499'997'000}));

    Env off;  // without the option, nothing is asked or kept
    off.ops.kernel_lag = 3'000;
    off.ops.recvs = {bytes(r.bytes)};
    auto d = off.make();
    off.open(*d, job(request()));
    CHECK_EQ(off.pump(*d).kind, K::completed_keep);
    CHECK(d->job()->recv_kernel_ns.empty());
}

// The slowed-client test hook (pytps calibrate): each read is stamped test_read_delay_ns after
// it returned (busy-waited on the clock), and every event it completed carries that stamp.
void test_read_delay_stamps_later() {
    const Response r = sse_response(3);
    Env e;
    e.opt.test_read_delay_ns = 50'000;  // the fake clock ticks 1 µs per call: exactly reached
    e.ops.recvs = {bytes(r.bytes, 2'000'000'000)};
    auto c = e.make();
    e.open(*c, job(request()));
    CHECK_EQ(e.pump(*c).kind, K::completed_keep);
    CHECK_EQ(c->job()->http->recorder().output_times_ns(), std::vector<int64_t>(3, 2'000'050'000));
}

}  // namespace

const std::vector<Case> read_cases = {
    {"response_split_at_every_byte", response_split_at_every_byte},
    {"response_one_byte_per_read", response_one_byte_per_read},
    {"full_buffer_reads_again", full_buffer_reads_again},
    {"early_response_is_recorded_and_not_kept", early_response_is_recorded_and_not_kept},
    {"early_head_then_request_finishes", early_head_then_request_finishes},
    {"stale_keep_alive_is_sent_again", stale_keep_alive_is_sent_again},
    {"eof_before_response_on_new_connection", eof_before_response_on_new_connection},
    {"send_fails_after_an_early_answer", send_fails_after_an_early_answer},
    {"connection_ends_early", connection_ends_early},
    {"responses_that_end_the_connection", responses_that_end_the_connection},
    {"response_larger_than_the_cap", response_larger_than_the_cap},
    {"kernel_stamps_pair_each_read", kernel_stamps_pair_each_read},
    {"test_read_delay_stamps_later", test_read_delay_stamps_later},
};

}  // namespace harness
