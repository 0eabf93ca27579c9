#include <pybind11/numpy.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bindings/buffer.hpp"
#include "bindings/register.hpp"
#include "client/engine.hpp"
#include "calibration/read_floor.hpp"
#include "client/tls.hpp"

namespace pytps_bindings {
namespace {

using pytps::ClientEngine;
using pytps::ClientResult;
using pytps::HttpStreamRecorder;

py::object time_or_none(int64_t t) {
    if (t == ClientResult::kNoTime) return py::none();
    return py::int_(t);
}

py::array_t<int64_t> int64_array(const std::vector<int64_t>& v) {
    py::array_t<int64_t> out(static_cast<py::ssize_t>(v.size()));
    if (!v.empty()) std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(int64_t));
    return out;
}

int64_t timeout_arg(const char* name, long long v, bool zero_ok) {
    if (v < 0 || (v == 0 && !zero_ok))
        throw py::value_error(std::string(name) + " must be " + (zero_ok ? ">= 0" : "> 0") + " ns, got " +
                              std::to_string(v));
    return v;
}

}  // namespace

void register_client(py::module_& m) {
    m.attr("TLS_AVAILABLE") = pytps::tls_available();
#if defined(PYTPS_OPENSSL_BUNDLED)
    m.attr("TLS_BUNDLED") = true;
#else
    m.attr("TLS_BUNDLED") = false;
#endif
    m.def(
        "tls_library_version",
        []() -> py::object {
            if (!pytps::tls_available()) return py::none();
            return py::str(pytps::tls_library_version());
        },
        "tls_library_version() -> str | None\n\n"
        "The OpenSSL version the native client's TLS uses (e.g. 'OpenSSL 3.0.19 27 Jan 2026'), or None\n"
        "when this build has no TLS (TLS_AVAILABLE is False).");
    py::class_<ClientResult>(
        m, "ClientResult",
        "One finished request of a ClientEngine (returned by ClientEngine.collect()).")
        .def_readonly("id", &ClientResult::id, "The id given to submit().")
        .def_property_readonly("t_send_ns", [](const ClientResult& r) { return time_or_none(r.t_send_ns); },
                               "Stamp taken right before the write that completed the request, or None if\n"
                               "it was never sent.")
        .def_property_readonly("t_write_start_ns",
                               [](const ClientResult& r) { return time_or_none(r.t_write_start_ns); },
                               "When the request's first write began (the send phase runs from here to\n"
                               "t_send_ns), or None if it was never written.")
        .def_property_readonly("t_done_ns", [](const ClientResult& r) { return time_or_none(r.t_done_ns); },
                               "When the request finished: the read that ended the response, or the error.")
        .def_property_readonly(
            "connect_ns",
            [](const ClientResult& r) -> py::object {
                if (r.connect_ns < 0) return py::none();
                return py::int_(r.connect_ns);
            },
            "How long a new connection took to connect (ns); None on a reused connection.")
        .def_property_readonly(
            "tls_ns",
            [](const ClientResult& r) -> py::object {
                if (r.tls_ns < 0) return py::none();
                return py::int_(r.tls_ns);
            },
            "How long a new connection's TLS handshake took (ns); None on a reused or plain connection.")
        .def_property_readonly(
            "connection_id",
            [](const ClientResult& r) -> py::object {
                if (r.connection_id == 0) return py::none();
                return py::int_(r.connection_id);
            },
            "The engine's id of the connection the request was (last) sent on, stable for the\n"
            "engine's life: requests on one kept-alive connection share it. None if no connection\n"
            "was ever opened for it.")
        .def_property_readonly(
            "error",
            [](const ClientResult& r) -> py::object {
                if (r.error_class.empty()) return py::none();
                return py::str(r.error_class);
            },
            "The transport's own error class ('connect', 'timeout', 'no_response', 'client'), or None.\n"
            "HTTP statuses, framing and in-stream errors are read from `http`.")
        .def_readonly("error_detail", &ClientResult::error_detail, "What went wrong, for a transport error.")
        .def_readonly("retries", &ClientResult::retries,
                      "How many times the request was sent again, each on a new connection, because the\n"
                      "kept-alive connection it went on had been closed before any byte of a response\n"
                      "(0 or 1). t_send_ns is the last send's.")
        .def_property_readonly("recv_times_ns", [](const ClientResult& r) { return int64_array(r.recv_ns); },
                               "int64 array (kernel_timestamps only): the engine's stamp of each read that\n"
                               "carried a kernel stamp; the recorder's event times are among these.")
        .def_property_readonly("recv_kernel_times_ns",
                               [](const ClientResult& r) { return int64_array(r.recv_kernel_ns); },
                               "int64 array (kernel_timestamps only): the kernel's software receive stamp of\n"
                               "the same reads, moved onto CLOCK_MONOTONIC. For TCP it is the stamp of the\n"
                               "last segment a read took, so it is <= the engine's stamp of that read.")
        .def(
            "readout",
            [](const ClientResult& r, const py::tuple& request_id_headers) {
                // Every read-out a finished request's record takes, in one call (pytps.transport.
                // native_transport): an attribute at a time, and the response's own, were ~20
                // calls a request (issue 42).
                return py::make_tuple(
                    time_or_none(r.t_done_ns), time_or_none(r.t_send_ns), time_or_none(r.t_write_start_ns),
                    r.retries, r.connection_id == 0 ? py::object(py::none()) : py::object(py::int_(r.connection_id)),
                    r.connect_ns < 0 ? py::object(py::none()) : py::object(py::int_(r.connect_ns)),
                    r.tls_ns < 0 ? py::object(py::none()) : py::object(py::int_(r.tls_ns)),
                    r.error_class.empty() ? py::object(py::none()) : py::object(py::str(r.error_class)),
                    py::str(r.error_detail), http_readout(*r.http, request_id_headers));
            },
            py::arg("request_id_headers"),
            "readout(request_id_headers) -> tuple\n\n"
            "Every read-out at once, in this order: t_done_ns, t_send_ns, t_write_start_ns, retries,\n"
            "connection_id, connect_ns, tls_ns, error, error_detail, http.readout(request_id_headers).")
        .def_property_readonly(
            "http", [](ClientResult& r) -> HttpStreamRecorder& { return *r.http; },
            py::return_value_policy::reference_internal,
            "The response's HttpStreamRecorder (closed): status, headers, error, error_body and the\n"
            "StreamRecorder read-outs. It keeps this result alive.");

    py::class_<ClientEngine>(
        m, "ClientEngine",
        "ClientEngine(host, port, max_connections=100, connect_timeout_ns=10e9, idle_timeout_ns=120e9,\n"
        "             total_timeout_ns=0, first_byte_timeout_ns=0, max_response_bytes=256 MiB, spin_ns=0,\n"
        "             kernel_timestamps=False, tls=False, server_name=None, ca_file=None, ca_path=None,\n"
        "             verify=True, addresses=None)\n\n"
        "A native HTTP/1.1 client on its own thread (epoll, keep-alive pool, no GIL): submit()\n"
        "pre-rendered requests, watch notify_fd, collect() the finished ones. Every socket read is\n"
        "stamped right after it returns and fed to an HttpStreamRecorder. Timeouts are in ns; 0\n"
        "means none for total_timeout_ns, and 'the idle timeout' for first_byte_timeout_ns.\n"
        "kernel_timestamps: also keep the kernel's software receive stamp of each read\n"
        "(SO_TIMESTAMPING, moved onto CLOCK_MONOTONIC) in ClientResult.recv_kernel_times_ns.\n\n"
        "tls=True speaks TLS (OpenSSL, memory BIOs: the raw socket read is stamped and its plaintext\n"
        "carries that stamp); the handshake counts against connect_timeout_ns. server_name (default:\n"
        "host) is sent as SNI and checked against the certificate; ca_file: a PEM CA bundle, ca_path: a\n"
        "directory of hashed CA certificates, instead of the system's; verify=False checks neither\n"
        "chain nor name.\n\n"
        "Every address host resolves to is tried in getaddrinfo's order until one connects (new\n"
        "connections then start at it); addresses: IP literals to use instead of resolving host.\n"
        "test_read_delay_ns: a test hook (pytps calibrate): busy-wait this long after each read before\n"
        "stamping it, a client slowed on purpose.")
        .def(py::init([](const std::string& host, int port, int max_connections, long long connect_timeout_ns,
                         long long idle_timeout_ns, long long total_timeout_ns, long long first_byte_timeout_ns,
                         long long max_response_bytes, long long spin_ns, bool kernel_timestamps, bool tls,
                         py::object server_name, py::object ca_file, py::object ca_path, bool verify, py::object addresses,
                         long long test_read_delay_ns) {
                 if (port < 1 || port > 65535) throw py::value_error("port must be 1..65535, got " + std::to_string(port));
                 if (max_connections < 1)
                     throw py::value_error("max_connections must be >= 1, got " + std::to_string(max_connections));
                 if (max_response_bytes < 1)
                     throw py::value_error("max_response_bytes must be >= 1, got " + std::to_string(max_response_bytes));
                 pytps::ClientOptions o;
                 o.max_connections = max_connections;
                 o.connect_timeout_ns = timeout_arg("connect_timeout_ns", connect_timeout_ns, false);
                 o.idle_timeout_ns = timeout_arg("idle_timeout_ns", idle_timeout_ns, false);
                 o.total_timeout_ns = timeout_arg("total_timeout_ns", total_timeout_ns, true);
                 o.first_byte_timeout_ns = timeout_arg("first_byte_timeout_ns", first_byte_timeout_ns, true);
                 o.max_response_bytes = static_cast<size_t>(max_response_bytes);
                 o.spin_ns = timeout_arg("spin_ns", spin_ns, true);
                 o.kernel_timestamps = kernel_timestamps;
                 o.test_read_delay_ns = timeout_arg("test_read_delay_ns", test_read_delay_ns, true);
                 if (!tls && (!server_name.is_none() || !ca_file.is_none() || !ca_path.is_none()))
                     throw py::value_error("server_name, ca_file and ca_path are for TLS: pass tls=True");
                 if (tls && !pytps::tls_available())
                     throw py::value_error(
                         "this build of pytps has no TLS (OpenSSL was not found when it was compiled): install "
                         "libssl-dev and rebuild, or use the httpx transport for https://");
                 o.tls = tls;
                 o.verify = verify;
                 if (!server_name.is_none()) o.server_name = server_name.cast<std::string>();
                 if (!ca_file.is_none()) o.ca_file = py::str(ca_file).cast<std::string>();
                 if (!ca_path.is_none()) o.ca_path = py::str(ca_path).cast<std::string>();
                 if (!addresses.is_none()) {
                     for (py::handle a : addresses) o.addresses.push_back(a.cast<std::string>());
                     if (o.addresses.empty()) throw py::value_error("addresses is empty: pass None to resolve host");
                 }
                 py::gil_scoped_release release;  // name resolution may wait
                 return std::make_unique<ClientEngine>(host, port, o);
             }),
             py::arg("host"), py::arg("port"), py::arg("max_connections") = 100,
             py::arg("connect_timeout_ns") = 10'000'000'000LL, py::arg("idle_timeout_ns") = 120'000'000'000LL,
             py::arg("total_timeout_ns") = 0, py::arg("first_byte_timeout_ns") = 0,
             py::arg("max_response_bytes") = 256LL << 20, py::arg("spin_ns") = 0,
             py::arg("kernel_timestamps") = false, py::arg("tls") = false,
             py::arg("server_name") = py::none(), py::arg("ca_file") = py::none(),
             py::arg("ca_path") = py::none(), py::arg("verify") = true,
             py::arg("addresses") = py::none(), py::arg("test_read_delay_ns") = 0)
        .def(
            "submit",
            [](ClientEngine& self, unsigned long long id, py::handle request, const std::string& dialect,
               py::object t_sched_ns) {
                pytps::Dialect d;
                if (!pytps::parse_dialect(dialect, d))
                    throw py::value_error("unknown dialect '" + dialect + "'; use one of: " + pytps::dialect_list());
                BytesArg bytes(request);
                if (bytes.size() == 0) throw py::value_error("request_bytes is empty: pass a rendered HTTP/1.1 request");
                const int64_t t = t_sched_ns.is_none() ? ClientResult::kNoTime : t_sched_ns.cast<int64_t>();
                try {
                    self.submit(id, std::string(bytes.data(), bytes.size()), d, t);
                } catch (const std::runtime_error& e) {
                    throw py::value_error(e.what());
                }
            },
            py::arg("id"), py::arg("request_bytes"), py::arg("dialect"), py::arg("t_sched_ns") = py::none(),
            "submit(id, request_bytes, dialect, t_sched_ns=None)\n\n"
            "Queue one rendered HTTP/1.1 request (bytes, bytearray or memoryview) whose response is\n"
            "recorded in `dialect`. With t_sched_ns (CLOCK_MONOTONIC ns) the engine sends it at that\n"
            "instant from its own timer, else at once. Raises ValueError after stop().")
        .def(
            "submit_many",
            [](ClientEngine& self, py::sequence batch) {
                std::vector<ClientEngine::Submission> subs;
                subs.reserve(py::len(batch));
                size_t i = 0;
                for (py::handle item : batch) {
                    const std::string where = "submit_many item " + std::to_string(i++);
                    py::tuple t(py::reinterpret_borrow<py::object>(item));  // any sequence; TypeError otherwise
                    if (t.size() != 4)
                        throw py::value_error(where + ": expected (id, request_bytes, dialect, t_sched_ns or None)");
                    pytps::Dialect d;
                    const std::string dialect = t[2].cast<std::string>();
                    if (!pytps::parse_dialect(dialect, d))
                        throw py::value_error(where + ": unknown dialect '" + dialect + "'; use one of: " +
                                              pytps::dialect_list());
                    BytesArg bytes(t[1]);
                    if (bytes.size() == 0) throw py::value_error(where + ": request_bytes is empty");
                    subs.push_back(ClientEngine::Submission{
                        t[0].cast<uint64_t>(), std::string(bytes.data(), bytes.size()), d,
                        t[3].is_none() ? ClientResult::kNoTime : t[3].cast<int64_t>()});
                }
                try {
                    self.submit_many(std::move(subs));
                } catch (const std::runtime_error& e) {
                    throw py::value_error(e.what());
                }
            },
            py::arg("batch"),
            "submit_many(batch)\n\n"
            "Queue several requests at once: batch is a sequence of (id, request_bytes, dialect,\n"
            "t_sched_ns or None) tuples, checked before any is queued, then handed over under one lock\n"
            "with one wake-up of the engine thread. ValueError naming the bad item, or after stop().")
        .def_property_readonly("notify_fd", &ClientEngine::notify_fd,
                               "An eventfd that is readable while collect() has results (for loop.add_reader).")
        .def(
            "collect",
            [](ClientEngine& self) {
                std::vector<ClientResult> done = self.collect();
                py::list out(done.size());
                for (size_t i = 0; i < done.size(); ++i) out[i] = py::cast(std::move(done[i]));
                return out;
            },
             "collect() -> list[ClientResult]\n\nTake every finished request (in finishing order); resets notify_fd.")
        .def("stop", &ClientEngine::stop, py::call_guard<py::gil_scoped_release>(),
             "stop()\n\nEnd the engine's thread (joins it). Requests still in flight finish with error 'client';\n"
             "collect() returns them. Idempotent; also done when the engine is destroyed.")
        .def_property_readonly("connections_opened", &ClientEngine::connections_opened,
                               "How many TCP connections the engine has opened so far.")
        .def_property_readonly("wakeups", &ClientEngine::wakeups,
                               "How many times the engine thread returned from its epoll wait.")
        .def_property_readonly("reads", &ClientEngine::reads,
                               "How many socket reads returned data (about one per event when the\n"
                               "engine keeps up with one event per write).")
        .def_property_readonly("thread_cpu_ns", &ClientEngine::thread_cpu_ns,
                               "CPU time the engine thread used (ns), known once stop() returned; 0 before.")
        .def_property_readonly("spin_window_ns", &ClientEngine::spin_window_ns,
                               "The current busy-wait window before scheduled sends (adapts, <= spin_ns).");

    m.def(
        "measure_read_floor",
        [](int connections, long long gap_ns, long long duration_ns, long long message_bytes) {
            if (message_bytes < 1) throw py::value_error("message_bytes must be >= 1");
            pytps::ReadFloor f;
            {
                py::gil_scoped_release release;
                f = pytps::measure_read_floor(connections, gap_ns, duration_ns, static_cast<size_t>(message_bytes));
            }
            py::dict d;
            d["messages"] = f.messages;
            d["reads"] = f.reads;
            d["wakeups"] = f.wakeups;
            d["reader_cpu_ns"] = f.reader_cpu_ns;
            d["duration_ns"] = f.duration_ns;
            d["reader_cpu_ns_per_message"] = f.messages ? double(f.reader_cpu_ns) / double(f.messages) : 0.0;
            return d;
        },
        py::arg("connections") = 32, py::arg("gap_ns") = 1'000'000, py::arg("duration_ns") = 1'000'000'000,
        py::arg("message_bytes") = 200,
        "measure_read_floor(connections=32, gap_ns=1_000_000, duration_ns=1_000_000_000, message_bytes=200) -> dict\n\n"
        "The floor under any streaming client on this machine: a thread writes message_bytes to each\n"
        "of `connections` loopback TCP connections every gap_ns (spread evenly) for duration_ns, and\n"
        "the calling thread reads them with the barest epoll + recv loop. Returns messages, reads,\n"
        "wakeups, reader_cpu_ns (its CLOCK_THREAD_CPUTIME_ID) and reader_cpu_ns_per_message: what\n"
        "the kernel charges a reader per event, which no client can go below. ValueError for\n"
        "arguments < 1; RuntimeError naming a failed socket call.");
}

}  // namespace pytps_bindings
