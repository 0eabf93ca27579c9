#include "client/tls.hpp"

#include <stdexcept>

#ifdef PYTPS_HAVE_OPENSSL
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#endif

namespace pytps {

#ifdef PYTPS_HAVE_OPENSSL

namespace {

// The OpenSSL error queue of this thread as one line ("" if empty); empties it. *plain_http is
// set when a reason says the peer answered with something that is not TLS at all.
std::string drain_errors(bool* plain_http) {
    std::string out;
    while (const unsigned long e = ERR_get_error()) {
        const char* reason = ERR_reason_error_string(e);
        char buf[256];
        if (reason == nullptr) {
            ERR_error_string_n(e, buf, sizeof buf);
            reason = buf;
        }
        if (!out.empty()) out += "; ";
        out += reason;
        if (plain_http != nullptr && ERR_GET_LIB(e) == ERR_LIB_SSL) {
            const int r = ERR_GET_REASON(e);
            if (r == SSL_R_WRONG_VERSION_NUMBER || r == SSL_R_PACKET_LENGTH_TOO_LONG || r == SSL_R_UNEXPECTED_RECORD)
                *plain_http = true;
#ifdef SSL_R_RECORD_LAYER_FAILURE
            if (r == SSL_R_RECORD_LAYER_FAILURE) *plain_http = true;
#endif
        }
    }
    return out;
}

bool is_ip_address(const std::string& host) {
    unsigned char addr[16];
    return inet_pton(AF_INET, host.c_str(), addr) == 1 || inet_pton(AF_INET6, host.c_str(), addr) == 1;
}

}  // namespace

bool tls_available() { return true; }

std::string tls_library_version() { return OpenSSL_version(OPENSSL_VERSION); }

struct TlsContext::Impl {
    SSL_CTX* ctx = nullptr;
    ~Impl() {
        if (ctx) SSL_CTX_free(ctx);
    }
};

TlsContext::TlsContext(const TlsOptions& options) : impl_(std::make_unique<Impl>()), verify_(options.verify) {
    ERR_clear_error();
    impl_->ctx = SSL_CTX_new(TLS_client_method());
    if (impl_->ctx == nullptr) throw std::runtime_error("cannot make a TLS context: " + drain_errors(nullptr));
    SSL_CTX* ctx = impl_->ctx;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    static const unsigned char alpn[] = "\x08http/1.1";
    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn - 1);
    if (!options.verify) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
        return;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (!options.ca_file.empty() || !options.ca_path.empty()) {
        // Like Python's ssl.create_default_context(cafile=..., capath=...): these instead of the
        // system's default paths.
        const char* file = options.ca_file.empty() ? nullptr : options.ca_file.c_str();
        const char* path = options.ca_path.empty() ? nullptr : options.ca_path.c_str();
        if (SSL_CTX_load_verify_locations(ctx, file, path) != 1)
            throw std::invalid_argument(
                "cannot load " + (file ? "the CA bundle " + options.ca_file : "the CA directory " + options.ca_path) +
                " (" + drain_errors(nullptr) + "): " +
                (file ? "pass a readable PEM file of CA certificates" : "pass a readable directory of hashed CA certificates"));
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        throw std::runtime_error("cannot load the system's CA certificates (" + drain_errors(nullptr) +
                                 "): pass a PEM file of CA certificates as ca_file (--ca-bundle)");
    }
}

TlsContext::~TlsContext() = default;

struct TlsSession::Impl {
    SSL* ssl = nullptr;
    BIO* rbio = nullptr;  // ciphertext from the peer (owned by ssl)
    BIO* wbio = nullptr;  // ciphertext to the peer (owned by ssl)
    std::string server_name;
    bool verify = true;
    ~Impl() {
        if (ssl) SSL_free(ssl);  // frees both BIOs
    }
};

TlsSession::TlsSession(TlsContext& ctx, const std::string& server_name) : impl_(std::make_unique<Impl>()) {
    Impl& s = *impl_;
    s.server_name = server_name;
    s.verify = ctx.verify();
    ERR_clear_error();
    s.ssl = SSL_new(ctx.impl()->ctx);
    if (s.ssl == nullptr) throw std::runtime_error("cannot make a TLS session: " + drain_errors(nullptr));
    s.rbio = BIO_new(BIO_s_mem());
    s.wbio = BIO_new(BIO_s_mem());
    if (s.rbio == nullptr || s.wbio == nullptr) {
        if (s.rbio) BIO_free(s.rbio);
        if (s.wbio) BIO_free(s.wbio);
        throw std::runtime_error("cannot make TLS memory buffers: " + drain_errors(nullptr));
    }
    // An empty read BIO means "wait for more", not end of stream: the socket tells of EOF.
    BIO_set_mem_eof_return(s.rbio, -1);
    BIO_set_mem_eof_return(s.wbio, -1);
    SSL_set_bio(s.ssl, s.rbio, s.wbio);
    SSL_set_connect_state(s.ssl);
    const bool ip = is_ip_address(server_name);
    // SNI carries host names only (RFC 6066), never an address.
    if (!ip && !server_name.empty() && SSL_set_tlsext_host_name(s.ssl, server_name.c_str()) != 1)
        throw std::invalid_argument("cannot use '" + server_name + "' as the TLS server name: " + drain_errors(nullptr));
    if (s.verify && !server_name.empty()) {
        const int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s.ssl), server_name.c_str())
                          : SSL_set1_host(s.ssl, server_name.c_str());
        if (ok != 1)
            throw std::invalid_argument("cannot verify the TLS server name '" + server_name +
                                        "': " + drain_errors(nullptr));
    }
}

TlsSession::~TlsSession() = default;

TlsSession::Result TlsSession::fail(int ssl_error, const char* during) {
    Impl& s = *impl_;
    bool plain_http = false;
    const std::string queue = drain_errors(&plain_http);
    const long verify = SSL_get_verify_result(s.ssl);
    if (s.verify && !SSL_is_init_finished(s.ssl) && verify != X509_V_OK) {
        error_ = "TLS certificate verification failed for " + s.server_name + ": " +
                 X509_verify_cert_error_string(verify) +
                 ". If the server's certificate is signed by a private CA, trust that CA with --ca-bundle PATH "
                 "(ca_file); to skip verification, --insecure (verify=False)";
        return Result::failed;
    }
    error_ = std::string("TLS ") + during + " failed: ";
    if (!queue.empty()) {
        error_ += queue;
    } else if (ssl_error == SSL_ERROR_SYSCALL) {
        error_ += "the TLS stream broke off";
    } else {
        error_ += "SSL error " + std::to_string(ssl_error);
    }
    if (plain_http && !SSL_is_init_finished(s.ssl))
        error_ += " (the server did not answer in TLS: if it speaks plain HTTP, use an http:// URL)";
    return Result::failed;
}

TlsSession::Result TlsSession::handshake() {
    ERR_clear_error();
    const int rc = SSL_do_handshake(impl_->ssl);
    if (rc == 1) return Result::ok;
    const int e = SSL_get_error(impl_->ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return Result::want_read;
    return fail(e, "handshake");
}

bool TlsSession::handshake_done() const { return SSL_is_init_finished(impl_->ssl) == 1; }

void TlsSession::push(const char* data, size_t n) {
    // A memory BIO grows as needed: it takes all of it.
    while (n > 0) {
        const int chunk = n > (1u << 30) ? (1 << 30) : static_cast<int>(n);
        const int w = BIO_write(impl_->rbio, data, chunk);
        if (w <= 0) return;  // out of memory: the session then fails on its next read
        data += w;
        n -= static_cast<size_t>(w);
    }
}

TlsSession::Result TlsSession::unfinished(int rc, const char* during) {
    const int e = SSL_get_error(impl_->ssl, rc);
    // WANT_WRITE cannot happen on a memory BIO that grows; WANT_READ: the session must read
    // first (for a write: a renegotiation or key update in progress).
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return Result::want_read;
    if (e == SSL_ERROR_ZERO_RETURN) return Result::closed;
    return fail(e, during);
}

TlsSession::Result TlsSession::read(char* out, size_t cap, size_t* n) {
    *n = 0;
    ERR_clear_error();
    size_t got = 0;
    const int rc = SSL_read_ex(impl_->ssl, out, cap, &got);
    if (rc == 1) {
        *n = got;
        return Result::ok;
    }
    return unfinished(rc, "read");
}

TlsSession::Result TlsSession::write(const char* data, size_t len, size_t* n) {
    *n = 0;
    if (len == 0) return Result::ok;
    ERR_clear_error();
    size_t put = 0;
    const int rc = SSL_write_ex(impl_->ssl, data, len, &put);
    if (rc == 1) {
        *n = put;
        return Result::ok;
    }
    return unfinished(rc, "write");
}

bool TlsSession::take_output(std::string& out) {
    const size_t pending = BIO_ctrl_pending(impl_->wbio);
    if (pending == 0) return false;
    const size_t at = out.size();
    out.resize(at + pending);
    const int r = BIO_read(impl_->wbio, &out[at], static_cast<int>(pending));
    out.resize(at + (r > 0 ? static_cast<size_t>(r) : 0));
    return r > 0;
}

#else  // no OpenSSL: the types exist, nothing can be made

namespace {
const char* const kNoTls =
    "this build of pytps has no TLS (OpenSSL was not found when it was compiled): install libssl-dev "
    "(or your system's OpenSSL development package) and rebuild, or use the httpx transport for https://";
}

bool tls_available() { return false; }
std::string tls_library_version() { return ""; }

struct TlsContext::Impl {};
TlsContext::TlsContext(const TlsOptions&) { throw std::runtime_error(kNoTls); }
TlsContext::~TlsContext() = default;

struct TlsSession::Impl {};
TlsSession::TlsSession(TlsContext&, const std::string&) { throw std::runtime_error(kNoTls); }
TlsSession::~TlsSession() = default;
TlsSession::Result TlsSession::fail(int, const char*) {
    error_ = kNoTls;
    return Result::failed;
}
TlsSession::Result TlsSession::handshake() { return fail(0, ""); }
TlsSession::Result TlsSession::unfinished(int, const char*) { return fail(0, ""); }
bool TlsSession::handshake_done() const { return false; }
void TlsSession::push(const char*, size_t) {}
TlsSession::Result TlsSession::read(char*, size_t, size_t* n) {
    *n = 0;
    return fail(0, "");
}
TlsSession::Result TlsSession::write(const char*, size_t, size_t* n) {
    *n = 0;
    return fail(0, "");
}
bool TlsSession::take_output(std::string&) { return false; }

#endif

}  // namespace pytps
