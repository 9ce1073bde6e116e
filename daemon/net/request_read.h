// How a request's head and body are read into an HttpRequest (http_session.cpp's, apart
// so that the session stays one concern): the body appended into a std::string, the head's
// fields with lower-case names.
#pragma once

#include <algorithm>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>
#include <cctype>
#include <string>

#include "daemon/net/server.h"

namespace missy::net {

// A request body read into a std::string by appending. string_body's reader resizes the
// string (zero-filling it) and then copies into it: two passes over an agent's
// multi-megabyte conversation instead of one.
struct RequestBody {
  using value_type = std::string;

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>& length, boost::beast::error_code& ec) {
      // The parser checked the length against the body limit before this.
      if (length)
        body_.reserve(static_cast<size_t>(std::min<std::uint64_t>(*length, body_.max_size())));
      ec = {};
    }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::beast::error_code& ec) {
      std::size_t n = 0;
      for (auto b : boost::beast::buffers_range_ref(buffers)) {
        body_.append(static_cast<const char*>(b.data()), b.size());
        n += b.size();
      }
      ec = {};
      return n;
    }

    void finish(boost::beast::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

// The method, target and headers of `head` (no body). Names are lower-cased; a repeated
// field's values are joined with ", ".
template <class Fields>
HttpRequest HeadOf(const boost::beast::http::header<true, Fields>& head) {
  HttpRequest req;
  req.method = std::string(head.method_string());
  req.target = std::string(head.target());
  for (const auto& field : head) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto [it, inserted] = req.headers.emplace(name, std::string(field.value()));
    if (!inserted) {
      it->second += ", ";
      it->second += std::string(field.value());
    }
  }
  return req;
}

}  // namespace missy::net
