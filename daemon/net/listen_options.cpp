#include "daemon/net/listen_options.h"

#include <string>

namespace missy::net {

Status ValidateListenOptions(const NetOptions& options) {
  if ((!options.proxy_listen.empty() || !options.proxy_listen_fds.empty()) &&
      !options.proxy_handler) {
    return Status::InvalidArgument("proxy listeners need a proxy handler");
  }
  if (!options.ui_listen.empty() && !options.ui_handler) {
    return Status::InvalidArgument("inspector listeners need a handler");
  }
  std::vector<int> fds;  // adopted descriptors: each serves one listener
  if (options.api_listen_fd >= 0) fds.push_back(options.api_listen_fd);
  if (options.audit_listen_fd >= 0) fds.push_back(options.audit_listen_fd);
  fds.insert(fds.end(), options.proxy_listen_fds.begin(), options.proxy_listen_fds.end());
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i] < 0) {
      return Status::InvalidArgument("adopted proxy socket: invalid descriptor " +
                                     std::to_string(fds[i]));
    }
    if (std::find(fds.begin(), fds.begin() + static_cast<std::ptrdiff_t>(i), fds[i]) !=
        fds.begin() + static_cast<std::ptrdiff_t>(i)) {
      return Status::InvalidArgument("adopted listening socket: descriptor " +
                                     std::to_string(fds[i]) + " is given twice");
    }
  }
  std::vector<std::string> paths;  // socket files this server binds
  if (options.api_listen_fd < 0) paths.push_back(options.api_socket_path);
  if (options.audit_listen_fd < 0 && !options.audit_socket_path.empty()) {
    if (options.api_listen_fd < 0 && options.audit_socket_path == options.api_socket_path) {
      return Status::InvalidArgument("the audit socket path equals the API socket path: " +
                                     options.audit_socket_path);
    }
    paths.push_back(options.audit_socket_path);
  }
  for (const ListenAddress& address : options.proxy_listen) {
    if (address.kind != ListenAddress::Kind::kUnix) continue;
    if (std::find(paths.begin(), paths.end(), address.path) != paths.end()) {
      return Status::InvalidArgument("proxy listen address " + address.ToString() +
                                     " names a socket that is already used");
    }
    paths.push_back(address.path);
  }
  return Status::Ok();
}


}  // namespace missy::net
