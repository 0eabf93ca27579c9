// Which event backend this build has (CMake: -DPYTPS_EVENT_BACKEND=epoll|poll, which sets
// PYTPS_EVENT_BACKEND_POLL to 0 or 1). Without CMake (a harness or a cross-compile check
// compiling one file), the default: epoll on Linux, poll() elsewhere.
#pragma once

#if !defined(PYTPS_EVENT_BACKEND_POLL)
#if defined(__linux__)
#define PYTPS_EVENT_BACKEND_POLL 0
#else
#define PYTPS_EVENT_BACKEND_POLL 1
#endif
#endif
