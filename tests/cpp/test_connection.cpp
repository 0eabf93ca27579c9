// Table tests of pytps::Connection (csrc/client/connection.*), the client engine's per-connection
// state machine, with scripted socket calls and clock: no socket, no network. Compiled and run
// by tests/test_connection_cpp.py. This file: connecting, writing, timeouts, the idle pool, and
// main(), which runs every case and then checks that every transition was walked.
#include "connection_harness.hpp"

namespace harness {

int failures = 0;
int checks = 0;
const char* current_test = "";

std::set<std::pair<ConnState, ConnState>>& transitions_seen() {
    static std::set<std::pair<ConnState, ConnState>> seen;
    return seen;
}

namespace {

using K = Outcome::Kind;

// A new connection, its request sent, a response in two reads at t1 and t2; then the same again
// on the kept-alive connection.
void new_connection_then_reuse() {
    Env e;
    auto c = e.make();
    const Response r = sse_response(3);
    const size_t cut = r.event_ends[0];  // the head and the first event in the first read
    e.ops.recvs = {bytes(r.bytes.substr(0, cut), 2'000'000'000), bytes(r.bytes.substr(cut), 2'000'100'000)};
    const int64_t t_open = e.ops.clock + e.ops.tick;  // open's first clock read
    Outcome o = e.open(*c, job(request()));
    CHECK_EQ(o.kind, K::pending);
    CHECK_EQ(c->state(), ConnState::connecting);
    CHECK(c->wants_write());  // a connect in progress shows as writability
    CHECK(c->take_timer_request());
    CHECK_EQ(c->deadline(), t_open + e.opt.connect_timeout_ns);

    o = e.pump(*c);
    CHECK_EQ(o.kind, K::completed_keep);
    CHECK_EQ(o.t_ns, int64_t(2'000'100'000));
    CHECK_EQ(e.trace(), std::string("connecting>writing>reading_head>reading_body>idle"));
    CHECK_EQ(c->state(), ConnState::idle);
    CHECK(!c->wants_write());
    CHECK(c->reused());
    CHECK_EQ(e.ops.written, request());
    CHECK_EQ(e.reads.load(), uint64_t(2));
    auto j = c->take_job();
    CHECK_EQ(j->t_send_ns, e.ops.send_stamps.back());
    CHECK(j->connect_ns > 0);
    CHECK_EQ(j->tls_ns, int64_t(-1));
    CHECK_EQ(j->http->t_headers_ns(), int64_t(2'000'000'000));
    CHECK_EQ(j->http->parser().status(), 200);
    // Every event carries the stamp of the read that completed it.
    CHECK_EQ(j->http->recorder().output_times_ns(),
             (std::vector<int64_t>{2'000'000'000, 2'000'100'000, 2'000'100'000}));
    CHECK_EQ(c->deadline(), Connection::kNoDeadline);

    e.ops.recvs = {bytes(r.bytes, 3'000'000'000)};
    o = c->start(job(request(), 2));
    CHECK_EQ(o.kind, K::pending);
    CHECK_EQ(c->state(), ConnState::reading_head);
    o = e.pump(*c);
    CHECK_EQ(o.kind, K::completed_keep);
    CHECK_EQ(e.trace(), std::string("connecting>writing>reading_head>reading_body>idle>writing>reading_head>"
                                    "reading_body>idle"));
    j = c->take_job();
    CHECK_EQ(j->connect_ns, int64_t(-1));  // reused: no connect of its own
    CHECK_EQ(j->http->recorder().output_times_ns(), (std::vector<int64_t>(3, 3'000'000'000)));
    CHECK_EQ(e.ops.written, request() + request());
}

void connect_finished_at_once() {
    Env e;
    e.ops.open_result.in_progress = false;
    e.ops.recvs = {bytes(sse_response(1).bytes)};
    auto c = e.make();
    Outcome o = e.open(*c, job(request()));  // opened() goes straight on to the request
    CHECK_EQ(o.kind, K::pending);
    CHECK_EQ(c->state(), ConnState::reading_head);
    CHECK_EQ(e.pump(*c).kind, K::completed_keep);
    CHECK_EQ(e.trace(), std::string("connecting>writing>reading_head>reading_body>idle"));
}

void connect_refused() {
    Env e;
    e.ops.connect_err = ECONNREFUSED;
    auto c = e.make();
    CHECK_EQ(e.open(*c, job(request())).kind, K::pending);
    Outcome o = e.pump(*c);
    CHECK_EQ(o.kind, K::connect_failed);  // the engine may try the next address
    CHECK_EQ(std::string(c->error_class()), std::string("connect"));
    CHECK_EQ(c->take_error_detail(), std::string("connect failed: Connection refused"));
    CHECK_EQ(o.t_ns, e.ops.clock);
    CHECK_EQ(e.trace(), std::string("connecting>failed"));
    CHECK(e.ops.written.empty());
    c.reset();
    CHECK_EQ(e.ops.closed, std::vector<int>{3});
}

void connect_hangup_without_error() {
    Env e;
    e.ops.hangup = true;  // EPOLLHUP with SO_ERROR 0: still a failed connect
    auto c = e.make();
    e.open(*c, job(request()));
    Outcome o = e.pump(*c);
    CHECK_EQ(o.kind, K::connect_failed);
    CHECK_EQ(c->take_error_detail(), std::string("connect failed: Connection refused"));
}

void open_fails_at_once() {
    struct Row {
        OpenResult r;
        const char* detail;
    };
    const Row rows[] = {
        {{-1, false, ECONNREFUSED, "connect"}, "connect failed: Connection refused"},
        {{-1, false, EMFILE, "socket"}, "socket failed: Too many open files"},
        {{-1, false, EPERM, "setsockopt(SO_TIMESTAMPING)"}, "setsockopt(SO_TIMESTAMPING) failed: Operation not permitted"},
    };
    for (const Row& row : rows) {
        Env e;
        e.ops.open_result = row.r;
        auto c = e.make();
        Outcome o = e.open(*c, job(request()));
        CHECK_EQ(o.kind, K::connect_failed);
        CHECK_EQ(std::string(c->error_class()), std::string("connect"));
        CHECK_EQ(c->take_error_detail(), std::string(row.detail));
        CHECK_EQ(c->job()->connect_attempts, size_t(1));
        CHECK_EQ(c->fd(), -1);
        CHECK(c->take_job() != nullptr);
        c.reset();
        CHECK(e.ops.closed.empty());  // nothing was left open to close
    }
}

// The engine tries the next address with the same job: the connect timeout runs from the first
// attempt's start, and connect_ns covers every attempt.
void next_address_keeps_the_connect_start() {
    Env e;
    e.ops.connect_err = ECONNREFUSED;
    auto c = e.make();
    e.open(*c, job(request()));
    const int64_t t_first = c->job()->connect_start_ns;
    CHECK_EQ(c->deadline(), t_first + e.opt.connect_timeout_ns);
    CHECK_EQ(e.pump(*c).kind, K::connect_failed);
    auto j = c->take_job();
    CHECK_EQ(j->connect_attempts, size_t(1));
    e.ops.connect_err = 0;
    e.ops.recvs = {bytes(sse_response(1).bytes)};
    auto d = e.make(2);
    const int64_t t_second = e.ops.clock;
    e.open(*d, std::move(j));
    CHECK_EQ(d->job()->connect_start_ns, t_first);
    CHECK_EQ(d->deadline(), t_first + e.opt.connect_timeout_ns);
    CHECK_EQ(e.pump(*d).kind, K::completed_keep);
    CHECK_EQ(d->job()->connect_attempts, size_t(2));
    CHECK(t_first + d->job()->connect_ns > t_second);  // both attempts are in it
    CHECK(t_first + d->job()->connect_ns < d->job()->t_send_ns);
}

// Every send and every recv returns EAGAIN once first: the same result, the same bytes.
void eagain_on_every_call() {
    Env e;
    e.ops.again_first = true;
    const Response r = sse_response(2);
    e.ops.recvs = {bytes(r.bytes.substr(0, 20)), bytes(r.bytes.substr(20, 100)), bytes(r.bytes.substr(120))};
    auto c = e.make();
    e.open(*c, job(request(300)));
    Outcome o = e.pump(*c);
    CHECK_EQ(o.kind, K::completed_keep);
    CHECK_EQ(e.ops.written, request(300));
    CHECK_EQ(e.ops.eagain_sends, 1);  // one send took it all, after its EAGAIN
    CHECK_EQ(e.ops.eagain_recvs, 3);
    CHECK_EQ(e.reads.load(), uint64_t(3));
    auto j = c->take_job();
    CHECK_EQ(j->t_send_ns, e.ops.send_stamps.back());
    CHECK_EQ(j->http->recorder().output_times_ns(),
             (std::vector<int64_t>{e.ops.reads[2].t, e.ops.reads[2].t}));
}

// Short writes of one byte, each after an EAGAIN: every byte goes out once, in order, and t_send
// is the stamp of the send that wrote the last one.
void one_byte_writes() {
    for (bool again : {false, true}) {
        Env e;
        e.ops.send_max = 1;
        e.ops.again_first = again;
        e.ops.recvs = {bytes(sse_response(1).bytes)};
        auto c = e.make();
        e.open(*c, job(request(40)));
        CHECK_EQ(e.pump(*c).kind, K::completed_keep);
        CHECK_EQ(e.ops.written, request(40));
        CHECK_EQ(e.ops.send_stamps.size(), request(40).size());
        CHECK_EQ(e.ops.eagain_sends, again ? int(request(40).size()) : 0);
        CHECK_EQ(c->job()->t_send_ns, e.ops.send_stamps.back());
        CHECK_EQ(e.trace(), std::string("connecting>writing>reading_head>reading_body>idle"));
    }
}

// EINTR is retried on both sides, not taken for an error.
void interrupted_calls_are_retried() {
    Env e;
    e.ops.sends = {send_error(EINTR), take()};
    e.ops.recvs = {recv_error(EINTR), bytes(sse_response(1).bytes)};
    auto c = e.make();
    e.open(*c, job(request()));
    CHECK_EQ(e.pump(*c).kind, K::completed_keep);
    CHECK_EQ(e.ops.written, request());
}

// A send that fails on a new connection, nothing to read: no response came (class no_response);
// with the server's EOF waiting, the same.
void send_fails_on_new_connection() {
    for (bool eof_waits : {false, true}) {
        Env e;
        e.ops.sends = {take(10), send_error(ECONNRESET)};
        if (eof_waits) e.ops.recvs = {eof()};
        auto c = e.make();
        e.open(*c, job(request()));
        Outcome o = e.pump(*c);
        CHECK_EQ(o.kind, K::failed);
        CHECK_EQ(std::string(c->error_class()), std::string("no_response"));
        CHECK_EQ(c->take_error_detail(), std::string(eof_waits ? "no byte of a response came: the server closed the connection"
                                                                : "no byte of a response came: send failed: Connection reset by peer"));
        CHECK_EQ(e.trace(), std::string("connecting>writing>failed"));
        CHECK(c->job()->http->parser().closed_early());
        CHECK_EQ(e.ops.written.size(), size_t(10));
    }
}

// The deadlines: connect, first byte, idle after data, total, a write that never ends; a stale
// timer (an earlier phase's) is ignored and an early one is re-armed.
void timeouts() {
    {
        Env e;
        auto c = e.make();
        e.open(*c, job(request()));
        const int64_t at = c->deadline();
        const uint64_t gen = c->timer_gen();
        c->take_timer_request();
        e.ops.clock = at - 2 * e.ops.tick;
        CHECK_EQ(c->on_timer(gen).kind, K::pending);
        CHECK(c->take_timer_request());  // data or not, it checks again at the deadline
        CHECK_EQ(c->on_timer(gen + 7).kind, K::pending);
        CHECK(!c->take_timer_request());
        Outcome o = c->on_timer(gen);
        CHECK_EQ(o.kind, K::failed);
        CHECK_EQ(std::string(c->error_class()), std::string("timeout"));
        CHECK_EQ(c->take_error_detail(), std::string("connect timed out after 10 s"));
        CHECK_EQ(e.trace(), std::string("connecting>failed"));
    }
    {
        Env e;
        e.opt.first_byte_timeout_ns = 2'000'000'000;
        e.opt.idle_timeout_ns = 5'000'000'000;
        auto c = e.make();
        e.open(*c, job(request()));
        e.pump(*c);
        CHECK_EQ(c->state(), ConnState::reading_head);
        CHECK_EQ(c->deadline(), e.ops.send_stamps.back() + 2'000'000'000);
        e.ops.clock = c->deadline();
        (void)c->on_timer(c->timer_gen());
        CHECK_EQ(c->take_error_detail(), std::string("no data for 2 s (read timeout)"));
        CHECK_EQ(e.trace(), std::string("connecting>writing>reading_head>failed"));
    }
    {
        Env e;
        e.opt.idle_timeout_ns = 5'000'000'000;
        const Response r = sse_response(1);
        e.ops.recvs = {bytes(r.bytes.substr(0, r.head_end + 3), 4'000'000'000)};
        auto c = e.make();
        e.open(*c, job(request()));
        e.pump(*c);
        CHECK_EQ(c->deadline(), int64_t(9'000'000'000));
        e.opt.total_timeout_ns = 3'000'000'000;  // now tighter than the idle one
        std::string why;
        CHECK_EQ(c->deadline(&why), c->job()->t_send_ns + 3'000'000'000);
        CHECK_EQ(why, std::string("the response took longer than 3 s (total timeout)"));
        e.opt.total_timeout_ns = 0;
        e.ops.clock = 9'000'000'000 - e.ops.tick;
        (void)c->on_timer(c->timer_gen());
        CHECK_EQ(c->take_error_detail(), std::string("no data for 5 s (read timeout)"));
        CHECK_EQ(e.trace(), std::string("connecting>writing>reading_head>reading_body>failed"));
    }
    {
        Env e;  // the server never reads: the write itself times out
        e.ops.sends = {take(5), blocked()};
        auto c = e.make();
        e.open(*c, job(request()));
        e.pump(*c);
        CHECK_EQ(c->state(), ConnState::writing);
        CHECK(c->wants_write());
        e.ops.clock = c->deadline();
        CHECK_EQ(c->on_timer(c->timer_gen()).kind, K::failed);
        CHECK_EQ(e.trace(), std::string("connecting>writing>failed"));
    }
}

// Any readiness of a plain kept-alive connection is the server closing it (or sending unasked bytes).
void idle_connection_closed_by_server() {
    Env e;
    e.ops.recvs = {bytes(sse_response(1).bytes)};
    auto c = e.make();
    e.open(*c, job(request()));
    CHECK_EQ(e.pump(*c).kind, K::completed_keep);
    c->take_job();
    e.ops.recvs = {eof()};
    Outcome o = e.pump(*c);
    CHECK_EQ(o.kind, K::closed);
    CHECK_EQ(e.trace(), std::string("connecting>writing>reading_head>reading_body>idle>closed"));
}

}  // namespace

const std::vector<Case> lifecycle_cases = {
    {"new_connection_then_reuse", new_connection_then_reuse},
    {"connect_finished_at_once", connect_finished_at_once},
    {"connect_refused", connect_refused},
    {"connect_hangup_without_error", connect_hangup_without_error},
    {"open_fails_at_once", open_fails_at_once},
    {"next_address_keeps_the_connect_start", next_address_keeps_the_connect_start},
    {"eagain_on_every_call", eagain_on_every_call},
    {"one_byte_writes", one_byte_writes},
    {"interrupted_calls_are_retried", interrupted_calls_are_retried},
    {"send_fails_on_new_connection", send_fails_on_new_connection},
    {"timeouts", timeouts},
    {"idle_connection_closed_by_server", idle_connection_closed_by_server},
};

}  // namespace harness

int main() {
    using namespace harness;
    for (const auto* cases : {&lifecycle_cases, &read_cases, &tls_cases}) {
        for (const Case& c : *cases) {
            current_test = c.name;
            const int before = failures;
            c.fn();
            std::printf("%-48s %s\n", c.name, failures == before ? "ok" : "FAILED");
        }
    }
    // Every transition the state machine has, walked at least once; none it does not have.
    current_test = "transition coverage";
    using S = ConnState;
    std::set<std::pair<S, S>> expected = {
        {S::connecting, S::writing},       {S::connecting, S::failed},       {S::writing, S::reading_head},
        {S::writing, S::reading_body},     {S::writing, S::closed},          {S::writing, S::failed},
        {S::reading_head, S::reading_body}, {S::reading_head, S::closed},    {S::reading_head, S::failed},
        {S::reading_body, S::idle},        {S::reading_body, S::closed},     {S::reading_body, S::failed},
        {S::idle, S::writing},             {S::idle, S::closed},
    };
    if (!tls_cases.empty()) {
        expected.insert({{S::connecting, S::tls_handshake}, {S::tls_handshake, S::writing},
                         {S::tls_handshake, S::failed}});
    }
    for (const auto& t : expected) {
        const bool seen = transitions_seen().count(t) != 0;
        report(seen, __FILE__, __LINE__, "transition walked: ",
               std::string(state_name(t.first)) + " -> " + state_name(t.second));
    }
    for (const auto& t : transitions_seen()) {
        report(expected.count(t) != 0, __FILE__, __LINE__, "no unexpected transition: ",
               std::string(state_name(t.first)) + " -> " + state_name(t.second));
    }
    std::printf("%zu transitions walked; TLS cases: %s\n", transitions_seen().size(),
                tls_cases.empty() ? "skipped (built without OpenSSL)" : "run");
    std::printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
