// The addresses a ClientEngine connects to: every one getaddrinfo gives for the host, in its
// order, so that a failed connect can go on to the next (a host that resolves to ::1 first while
// the server listens on 127.0.0.1 only).
#pragma once

#include <sys/socket.h>

#include <string>
#include <vector>

namespace pytps {

struct Address {
    sockaddr_storage storage{};
    socklen_t len = 0;
    std::string text;  // "127.0.0.1:8000", "[::1]:8000": for error details
    const sockaddr* addr() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

// host:port's addresses in getaddrinfo's order; with numeric non-empty, those (IP literals,
// already resolved, e.g. by Python) instead. Empty, with *error set, when nothing resolves.
std::vector<Address> resolve_addresses(const std::string& host, int port, const std::vector<std::string>& numeric,
                                       std::string* error);

}  // namespace pytps
