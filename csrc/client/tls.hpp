// TLS for the ClientEngine: an OpenSSL client context and a session that runs over memory
// BIOs, so the engine keeps its own socket reads and writes. The raw recv() is stamped where
// it returns; its ciphertext is pushed into the session and the plaintext it yields carries
// that same stamp. TLS decryption is therefore not counted as network time, and a kernel
// receive timestamp of the socket read applies to the TLS path unchanged.
//
// Plain C++ (no Python). Without OpenSSL at build time (no PYTPS_HAVE_OPENSSL) the types
// still exist, tls_available() is false and TlsContext's constructor throws.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace pytps {

// Whether this build has TLS (OpenSSL was found when it was compiled).
bool tls_available();
// The OpenSSL version in use at run time, e.g. "OpenSSL 3.0.19 27 Jan 2026"; "" without TLS.
std::string tls_library_version();

struct TlsOptions {
    bool verify = true;   // verify the server's certificate chain and name
    std::string ca_file;  // PEM file of trusted CAs instead of the system store ("": the system's)
    std::string ca_path;  // a directory of hashed CA certificates (c_rehash), with or instead of ca_file
};

// A TLS client context (SSL_CTX): TLS 1.2 or later, ALPN "http/1.1", peer verification with
// the system's default CA paths unless told otherwise. Shared by every session of an engine
// (used from the engine's thread only).
class TlsContext {
public:
    // std::invalid_argument for an unreadable ca_file; std::runtime_error without TLS support.
    explicit TlsContext(const TlsOptions& options);
    ~TlsContext();
    TlsContext(const TlsContext&) = delete;
    TlsContext& operator=(const TlsContext&) = delete;

    bool verify() const { return verify_; }

    struct Impl;
    Impl* impl() const { return impl_.get(); }

private:
    std::unique_ptr<Impl> impl_;
    bool verify_ = true;
};

// One connection's TLS state over memory BIOs. The caller moves the ciphertext: push() what
// the socket read, send what take_output() gives. Every call is non-blocking.
class TlsSession {
public:
    enum class Result {
        ok,         // done (handshake finished, plaintext read, plaintext written)
        want_read,  // needs more ciphertext from the peer: push() it and call again
        closed,     // the peer sent close_notify
        failed,     // a TLS error: error() says what
    };

    // server_name: the name to verify the certificate against and to send as SNI (an IP
    // address is verified as one and not sent as SNI).
    TlsSession(TlsContext& ctx, const std::string& server_name);
    ~TlsSession();
    TlsSession(const TlsSession&) = delete;
    TlsSession& operator=(const TlsSession&) = delete;

    // Advances the handshake (the first call makes the ClientHello).
    Result handshake();
    bool handshake_done() const;
    // Ciphertext read from the socket (copied; the caller's buffer is free afterwards).
    void push(const char* data, size_t n);
    // Decrypted bytes, up to cap; *n is how many (0 unless ok).
    Result read(char* out, size_t cap, size_t* n);
    // Encrypts plaintext; *n is how much was taken (all of it unless want_read: the session
    // must read first, as in a renegotiation; call again with the rest after a push()).
    Result write(const char* data, size_t len, size_t* n);
    // Appends the ciphertext waiting to be sent to out; true if there was any.
    bool take_output(std::string& out);
    // What went wrong, once a call returned failed.
    const std::string& error() const { return error_; }

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
    std::string error_;
    Result fail(int ssl_error, const char* during);
    // The result of an SSL_read_ex / SSL_write_ex that returned rc (not 1): wait, closed or failed.
    Result unfinished(int rc, const char* during);
};

}  // namespace pytps
