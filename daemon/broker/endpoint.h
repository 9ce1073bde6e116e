// Where and how to reach the NATS server (context.broker): urls, credentials, TLS. Plain
// data, without nats.c, so that option structs can hold it (daemon/broker/nats_conn.h
// connects with it).
#pragma once

#include <chrono>
#include <string>

#include "config/config.h"

namespace missy::broker {

struct Endpoint {
  std::string url;  // nats://host:port or tls://host:port, comma-separated for several
  std::string user, password, token;  // password and token: never logged
  std::string creds_file;  // .creds (user JWT + nkey seed)
  std::string ca_file;     // PEM CAs for tls:// ("" = the system's)
  std::string name;        // the connection's name on the server (monitoring)
  std::chrono::milliseconds connect_timeout{2000};
  // true: nats.c reconnects by itself (subscriptions survive); false: a lost connection
  // is the caller's to handle.
  bool reconnect = false;
};

// context.broker's url, credentials and TLS files.
Endpoint EndpointFrom(const BrokerConfig& config);

// This daemon's name in subjects and message ids: context.broker.daemon_id, or
// DefaultDaemonId() when it is empty.
std::string DaemonIdFrom(const BrokerConfig& config);
// "<machine id>-<user>" as one subject token.
std::string DefaultDaemonId();

}  // namespace missy::broker
