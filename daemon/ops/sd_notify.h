// The service manager's notification protocol (sd_notify(3)): READY, RELOADING, STOPPING,
// STATUS and WATCHDOG messages to $NOTIFY_SOCKET. Every call is a no-op returning false
// when the daemon was not started by a service manager (NOTIFY_SOCKET unset); errors are
// never fatal. Thread-safe. Uses libsystemd when built with it (MISSY_HAVE_SYSTEMD),
// else writes the datagram itself (path or abstract "@name" sockets).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace missy::ops {

// Sends `state` ("READY=1\nSTATUS=serving"). True when the datagram was sent.
bool Notify(std::string_view state);

// READY=1 with a STATUS= line.
bool NotifyReady(std::string_view status);
// RELOADING=1 with MONOTONIC_USEC= (the newer reload protocol) and a STATUS= line; answer
// with NotifyReady once the reload is done, whether it applied or not.
bool NotifyReloading(std::string_view status);
bool NotifyStopping(std::string_view status);
bool NotifyStatus(std::string_view status);
bool NotifyWatchdog();

// The watchdog timeout the manager expects pings within: WATCHDOG_USEC when set,
// WATCHDOG_PID is unset or this process, and NOTIFY_SOCKET is set; zero (no watchdog)
// otherwise.
std::chrono::microseconds WatchdogTimeout();

// CLOCK_MONOTONIC in microseconds (the value MONOTONIC_USEC= carries).
uint64_t MonotonicUsec();

}  // namespace missy::ops
