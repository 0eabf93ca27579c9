#include "client/resolve.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstring>

namespace pytps {

namespace {

std::string describe(const sockaddr* sa, int port) {
    char ip[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, ip, sizeof ip);
        return "[" + std::string(ip) + "]:" + std::to_string(port);
    }
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(port);
}

// Appends every TCP address of one getaddrinfo call; false (and *error) when it fails.
bool add(const std::string& host, int port, int flags, std::vector<Address>& out, std::string* error) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = flags;
    addrinfo* res = nullptr;
    const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (rc != 0 || res == nullptr) {
        *error = "cannot resolve " + host + ": " + gai_strerror(rc);
        if (res) freeaddrinfo(res);
        return false;
    }
    for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
        Address a;
        std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
        a.len = ai->ai_addrlen;
        a.text = describe(ai->ai_addr, port);
        out.push_back(std::move(a));
    }
    freeaddrinfo(res);
    return true;
}

}  // namespace

std::vector<Address> resolve_addresses(const std::string& host, int port, const std::vector<std::string>& numeric,
                                       std::string* error) {
    std::vector<Address> out;
    if (numeric.empty()) {
        if (!add(host, port, 0, out, error)) return {};
    } else {
        for (const std::string& ip : numeric) {
            if (!add(ip, port, AI_NUMERICHOST, out, error)) return {};
        }
    }
    if (out.empty()) *error = "cannot resolve " + host + ": no address to connect to";
    return out;
}

}  // namespace pytps
