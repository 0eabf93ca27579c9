// Table tests of pytps::Connection over TLS: a real TlsSession (client/tls.cpp) against an
// OpenSSL server that lives in memory (Peer), through the scripted FakeOps. Part of the
// program tests/cpp/test_connection.cpp's main() runs; without OpenSSL it has no cases.
#include "connection_harness.hpp"

#ifdef PYTPS_HAVE_OPENSSL

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <functional>

namespace harness {
namespace {

using K = Outcome::Kind;

// A self-signed certificate for "localhost" (EC P-256), made once.
SSL_CTX* server_ctx() {
    static SSL_CTX* ctx = [] {
        EVP_PKEY* key = nullptr;
        EVP_PKEY_CTX* kctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nullptr);
        EVP_PKEY_keygen_init(kctx);
        EVP_PKEY_CTX_set_ec_paramgen_curve_nid(kctx, NID_X9_62_prime256v1);
        EVP_PKEY_keygen(kctx, &key);
        EVP_PKEY_CTX_free(kctx);
        X509* cert = X509_new();
        X509_set_version(cert, 2);
        ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
        X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
        X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
        X509_set_pubkey(cert, key);
        X509_NAME* name = X509_get_subject_name(cert);
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"), -1,
                                   -1, 0);
        X509_set_issuer_name(cert, name);
        X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, nullptr, NID_subject_alt_name, const_cast<char*>("DNS:localhost"));
        X509_add_ext(cert, san, -1);
        X509_EXTENSION_free(san);
        X509_sign(cert, key, EVP_sha256());
        SSL_CTX* c = SSL_CTX_new(TLS_server_method());
        SSL_CTX_use_certificate(c, cert);
        SSL_CTX_use_PrivateKey(c, key);
        X509_free(cert);
        EVP_PKEY_free(key);
        return c;
    }();
    return ctx;
}

// The server end, over memory BIOs. It answers once a request head has come in (on_request),
// or as soon as the handshake is done (on_handshake).
struct TlsPeer : Peer {
    SSL* ssl;
    BIO* in;
    BIO* out;
    std::string got;  // plaintext from the client
    std::string wire;  // ciphertext for the client, not yet delivered
    size_t produced = 0;
    std::vector<size_t> record_ends;  // produced after each write()
    std::function<void(TlsPeer&)> on_handshake, on_request;
    bool answered = false;

    TlsPeer() : ssl(SSL_new(server_ctx())), in(BIO_new(BIO_s_mem())), out(BIO_new(BIO_s_mem())) {
        BIO_set_mem_eof_return(in, -1);
        SSL_set_bio(ssl, in, out);
        SSL_set_accept_state(ssl);
    }
    ~TlsPeer() override { SSL_free(ssl); }

    void from_client(const char* data, size_t n) override {
        BIO_write(in, data, static_cast<int>(n));
        if (!SSL_is_init_finished(ssl)) {
            SSL_do_handshake(ssl);
            collect();
            if (!SSL_is_init_finished(ssl)) return;
            if (on_handshake) on_handshake(*this);
        }
        char buf[4096];
        size_t n_read = 0;
        while (SSL_read_ex(ssl, buf, sizeof buf, &n_read) == 1) got.append(buf, n_read);
        collect();
        if (!answered && got.find("\r\n\r\n") != std::string::npos) {
            answered = true;
            if (on_request) on_request(*this);
        }
    }
    size_t pending() const override { return wire.size(); }
    std::string take(size_t max) override {
        std::string part = wire.substr(0, max);
        wire.erase(0, part.size());
        return part;
    }

    void collect() {
        char buf[4096];
        int n;
        while ((n = BIO_read(out, buf, sizeof buf)) > 0) {
            wire.append(buf, static_cast<size_t>(n));
            produced += static_cast<size_t>(n);
        }
    }
    void write(const std::string& s) {  // one record
        size_t n = 0;
        SSL_write_ex(ssl, s.data(), s.size(), &n);
        collect();
        record_ends.push_back(produced);
    }
    // Writes a response one record per event (and the head, and the end).
    void respond(const Response& r) {
        size_t at = 0;
        std::vector<size_t> cuts = {r.head_end};
        cuts.insert(cuts.end(), r.event_ends.begin(), r.event_ends.end());
        cuts.push_back(r.bytes.size());
        for (size_t cut : cuts) {
            write(r.bytes.substr(at, cut - at));
            at = cut;
        }
    }
    void close_notify() {
        SSL_shutdown(ssl);
        collect();
    }
    void ticket() {
        SSL_new_session_ticket(ssl);
        SSL_do_handshake(ssl);  // sends it
        collect();
    }
};

struct TlsEnv : Env {
    TlsPeer peer;
    explicit TlsEnv(bool verify = false) {
        TlsOptions t;
        t.verify = verify;
        tls = std::make_unique<TlsContext>(t);
        cfg.tls = tls.get();
        opt.tls = true;
        opt.server_name = "localhost";
        ops.peer = &peer;
    }
};

// The stamp each event should carry: that of the read that delivered the last byte of its record.
std::vector<int64_t> record_stamps(const FakeOps& ops, const std::vector<size_t>& record_ends, size_t first,
                                   size_t count) {
    std::vector<int64_t> out;
    for (size_t i = first; i < first + count; ++i) {
        for (const FakeOps::Read& r : ops.reads) {
            if (r.peer_total >= record_ends[i]) {
                out.push_back(r.t);
                break;
            }
        }
    }
    return out;
}

// Handshake, request, response, a session ticket while idle, a second request on the same session.
void tls_keep_alive_and_reuse() {
    TlsEnv e;
    const Response r = sse_response(3);
    e.peer.on_request = [&](TlsPeer& p) { p.respond(r); };
    auto c = e.make();
    CHECK_EQ(e.open(*c, job(request())).kind, K::pending);
    Outcome o = e.pump(*c);
    CHECK_EQ(o.kind, K::completed_keep);
    CHECK_EQ(e.trace(), std::string("connecting>tls_handshake>writing>reading_head>reading_body>idle"));
    CHECK_EQ(e.peer.got, request());
    auto j = c->take_job();
    CHECK(j->tls_ns > 0);
    CHECK(j->connect_ns > 0);
    CHECK_EQ(j->http->parser().status(), 200);
    CHECK_EQ(j->http->recorder().output_times_ns(), record_stamps(e.ops, e.peer.record_ends, 1, 3));
    CHECK_EQ(j->t_send_ns, e.ops.send_stamps.back());

    e.peer.ticket();  // TLS housekeeping between requests keeps the connection
    CHECK(e.peer.pending() > 0);
    CHECK_EQ(e.pump(*c).kind, K::pending);
    CHECK_EQ(c->state(), ConnState::idle);

    e.peer.answered = false;
    e.peer.got.clear();
    e.peer.record_ends.clear();
    const size_t reads_before = e.ops.reads.size();
    o = c->start(job(request(), 2));
    if (!o.ended()) o = e.pump(*c);
    CHECK_EQ(o.kind, K::completed_keep);
    CHECK_EQ(e.peer.got, request());
    CHECK_EQ(c->job()->tls_ns, int64_t(-1));  // no handshake of its own
    CHECK(e.ops.reads.size() > reads_before);
    CHECK_EQ(c->job()->http->recorder().output_times_ns(), record_stamps(e.ops, e.peer.record_ends, 1, 3));
}

// Ciphertext one byte per read and per write, and EAGAIN before every call: the plaintext of a
// record carries the stamp of the raw read that delivered its last byte.
void tls_byte_at_a_time_with_eagain() {
    TlsEnv e;
    e.ops.peer_chunk = 1;
    e.ops.send_max = 1;
    e.ops.again_first = true;
    const Response r = sse_response(2);
    e.peer.on_request = [&](TlsPeer& p) { p.respond(r); };
    auto c = e.make();
    e.open(*c, job(request()));
    CHECK_EQ(e.pump(*c).kind, K::completed_keep);
    CHECK_EQ(e.peer.got, request());
    CHECK_EQ(e.trace(), std::string("connecting>tls_handshake>writing>reading_head>reading_body>idle"));
    CHECK_EQ(c->job()->http->recorder().output_times_ns(), record_stamps(e.ops, e.peer.record_ends, 1, 2));
    CHECK_EQ(c->job()->http->t_headers_ns(), record_stamps(e.ops, e.peer.record_ends, 0, 1)[0]);
    CHECK_EQ(size_t(e.ops.eagain_sends), e.ops.send_stamps.size());
}

// What ends the handshake: each fails the request with class "connect" and says why.
void tls_handshake_failures() {
    struct Row {
        const char* name;
        Recv recv;
        Send send;
        bool verify;
        const char* detail;
    };
    const Row rows[] = {
        {"reset", recv_error(ECONNRESET), take(), false,
         "the connection failed during the TLS handshake: Connection reset by peer"},
        {"eof", eof(), take(), false, "the server closed the connection during the TLS handshake"},
        {"plain http", bytes("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"), take(), false,
         "use an http:// URL"},
        {"send", again_recv(), send_error(EPIPE), false, "send failed during the TLS handshake: Broken pipe"},
        {"certificate", again_recv(), take(), true, "TLS certificate verification failed for localhost"},
    };
    for (const Row& row : rows) {
        current_test = row.name;
        TlsEnv e(row.verify);
        e.ops.recvs = {row.recv};
        e.ops.sends = {row.send};
        auto c = e.make();
        Outcome o = e.open(*c, job(request()));
        if (!o.ended()) o = e.pump(*c);
        CHECK_EQ(o.kind, K::failed);
        CHECK_EQ(std::string(c->error_class()), std::string("connect"));
        CHECK_HAS(c->take_error_detail(), row.detail);
        CHECK_EQ(e.trace(), std::string("connecting>tls_handshake>failed"));
    }
    current_test = "tls_handshake_failures";
}

// close_notify: mid-body it ends the response as a truncated one; on a reused connection before
// any byte of the response it is a stale connection (sent again).
void tls_close_notify() {
    {
        TlsEnv e;
        const Response r = sse_response(3);
        e.peer.on_request = [&](TlsPeer& p) {
            p.write(r.bytes.substr(0, r.event_ends[0]));
            p.close_notify();
        };
        auto c = e.make();
        e.open(*c, job(request()));
        CHECK_EQ(e.pump(*c).kind, K::completed_close);
        CHECK_EQ(e.trace(), std::string("connecting>tls_handshake>writing>reading_head>reading_body>closed"));
        CHECK(c->job()->http->parser().closed_early());
        CHECK_EQ(c->job()->http->recorder().output_times_ns().size(), size_t(1));
    }
    {
        TlsEnv e;
        e.peer.on_request = [&](TlsPeer& p) { p.respond(sse_response(1)); };
        auto c = e.make();
        e.open(*c, job(request()));
        CHECK_EQ(e.pump(*c).kind, K::completed_keep);
        c->take_job();
        e.peer.close_notify();  // unseen while idle: the next request finds it
        Outcome o = c->start(job(request(), 2));
        if (!o.ended()) o = e.pump(*c);
        CHECK_EQ(o.kind, K::retry_stale);
        CHECK_EQ(c->take_job()->retries, 1);
        CHECK_HAS(e.trace(), "idle>writing>reading_head>closed");
    }
}

// On a new connection, close_notify or a broken record before any byte of a response: class
// no_response, naming which (as an EOF or a reset does on plain HTTP).
void tls_no_response() {
    for (bool broken : {false, true}) {
        TlsEnv e;
        e.peer.on_request = [&](TlsPeer& p) {
            if (broken) {
                e.ops.recvs.push_back(bytes(std::string("\x17\x03\x03\x00\x05garbage", 13)));
            } else {
                p.close_notify();
            }
        };
        auto c = e.make();
        e.open(*c, job(request()));
        const Outcome o = e.pump(*c);
        CHECK_EQ(o.kind, K::failed);
        CHECK_EQ(std::string(c->error_class()), std::string("no_response"));
        CHECK_HAS(c->take_error_detail(), broken ? "no byte of a response came: TLS error: "
                                                 : "no byte of a response came: the server closed the TLS session");
        CHECK_HAS(e.trace(), "writing>reading_head>failed");
    }
}

// Application data on an idle TLS connection (a response nobody asked for) ends it.
void tls_idle_data_closes() {
    TlsEnv e;
    e.peer.on_request = [&](TlsPeer& p) { p.respond(sse_response(1)); };
    auto c = e.make();
    e.open(*c, job(request()));
    CHECK_EQ(e.pump(*c).kind, K::completed_keep);
    c->take_job();
    e.peer.write("HTTP/1.1 200 OK\r\n");
    CHECK_EQ(e.pump(*c).kind, K::closed);
    CHECK_HAS(e.trace(), "idle>closed");
}

// The server answers right after the handshake, before the request's ciphertext is all sent:
// recorded, and not kept.
void tls_early_response() {
    TlsEnv e;
    e.peer.on_handshake = [&](TlsPeer& p) {
        e.ops.write_limit = e.ops.written.size() + 5;  // and then it stops reading
        p.write("HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n");
    };
    auto c = e.make();
    e.open(*c, job(request(5000)));
    const Outcome o = e.pump(*c);
    CHECK_EQ(o.kind, K::completed_close);
    CHECK_EQ(c->job()->http->parser().status(), 413);
    CHECK_EQ(c->job()->t_send_ns, ClientJob::kNoTime);
    CHECK_EQ(e.trace(), std::string("connecting>tls_handshake>writing>closed"));
}

}  // namespace

const std::vector<Case> tls_cases = {
    {"tls_keep_alive_and_reuse", tls_keep_alive_and_reuse},
    {"tls_byte_at_a_time_with_eagain", tls_byte_at_a_time_with_eagain},
    {"tls_handshake_failures", tls_handshake_failures},
    {"tls_close_notify", tls_close_notify},
    {"tls_no_response", tls_no_response},
    {"tls_idle_data_closes", tls_idle_data_closes},
    {"tls_early_response", tls_early_response},
};

}  // namespace harness

#else

namespace harness {
const std::vector<Case> tls_cases = {};
}

#endif
