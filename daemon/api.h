// Api: the /v1 HTTP+JSON routes (docs/API.md). Transport-free: it maps an HttpRequest
// to an HttpResponse, so it is tested without sockets and the network edge stays in
// net.cpp. Thread-safe: handlers run concurrently on the event-loop threads; appends to
// one session are serialised so validation sees a consistent history.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "config/config.h"
#include "core/token_counter.h"
#include "daemon/auditor.h"
#include "daemon/history_cache.h"
#include "daemon/net.h"
#include "daemon/tokenizers.h"
#include "storage/database.h"

namespace missy {

struct RequestTarget;  // the parsed path and query of a request (api.cpp)

struct ApiDeps {
  Database* db = nullptr;
  Auditor* auditor = nullptr;
  std::function<int64_t()> clock_ms;  // unix ms
  std::function<std::string()> new_id;  // random hex, for session and context ids
  const TokenizerRegistry* tokenizers = nullptr;  // null: every count is heuristic
  std::string version = "0.1.0";
};

class Api {
 public:
  Api(ApiDeps deps, std::shared_ptr<const DaemonConfig> config);

  HttpResponse Handle(const HttpRequest& request);

  // Swaps the configuration (reload); requests in flight keep the one they started with.
  void SetConfig(std::shared_ptr<const DaemonConfig> config);
  std::shared_ptr<const DaemonConfig> config() const;

 private:
  struct Route;
  HttpResponse Health(const HttpRequest& req);
  HttpResponse CreateSession(const HttpRequest& req);
  HttpResponse ListSessions(const HttpRequest& req, const RequestTarget& t);
  HttpResponse GetSession(const HttpRequest& req, const std::string& id);
  HttpResponse AppendMessages(const HttpRequest& req, const std::string& id);
  HttpResponse ListMessages(const HttpRequest& req, const RequestTarget& t, const std::string& id);
  HttpResponse BuildContext(const HttpRequest& req, const std::string& id);
  HttpResponse ReportUsage(const HttpRequest& req, const std::string& id);
  HttpResponse ListSummaries(const HttpRequest& req, const std::string& id);
  HttpResponse GetSummary(const HttpRequest& req, const std::string& summary_id);
  HttpResponse Audit(const HttpRequest& req, const RequestTarget& t);
  HttpResponse VerifyAudit(const HttpRequest& req);
  HttpResponse EffectiveConfig(const HttpRequest& req);
  HttpResponse AddMemory(const HttpRequest& req);
  HttpResponse ListMemory(const HttpRequest& req, const RequestTarget& t);
  HttpResponse GetMemory(const HttpRequest& req, const std::string& memory_id);
  HttpResponse DeleteMemory(const HttpRequest& req, const std::string& memory_id);
  HttpResponse SearchMemory(const HttpRequest& req, const RequestTarget& t);
  HttpResponse AddLearning(const HttpRequest& req);
  HttpResponse ListLearnings(const HttpRequest& req, const RequestTarget& t);
  HttpResponse ListJobs(const HttpRequest& req, const RequestTarget& t);
  HttpResponse ImportMissy(const HttpRequest& req);

  HttpResponse Error(const HttpRequest& req, const Status& status, std::string_view session_id = {});
  // The counter for a session's model: its encoding (or heuristic) and factor.
  MessageTokenCounter CounterFor(const Session& session) const;
  std::mutex& SessionLock(const std::string& id);
  static std::string CalibrationKey(const Session& session);

  // Contexts handed out recently, so that a usage report can name one by context_id.
  struct IssuedContext {
    std::string session_id;
    std::string calibration_key;
    int64_t estimated_tokens = 0;  // what we counted for the messages and tools sent
  };
  void RememberContext(const std::string& context_id, IssuedContext context);
  std::optional<IssuedContext> FindContext(const std::string& context_id);

  ApiDeps deps_;
  mutable std::mutex config_mu_;
  std::shared_ptr<const DaemonConfig> config_;
  std::shared_ptr<const TokenCounter> heuristic_;
  // The session's history, from the cache or loaded (and cached). Hold SessionLock(id).
  Result<std::shared_ptr<std::vector<StoredMessage>>> History(const std::string& id);

  std::array<std::mutex, 64> session_locks_;
  HistoryCache history_;
  // Where each session's kept history started last time: the next context keeps that
  // start while it fits (prefix-stable, so provider prompt caches keep hitting).
  std::mutex anchors_mu_;
  std::unordered_map<std::string, int64_t> anchors_;
  std::mutex contexts_mu_;
  std::list<std::string> context_order_;  // oldest first, bounded
  std::unordered_map<std::string, IssuedContext> contexts_;
  int64_t started_ms_ = 0;
  std::atomic<int64_t> requests_{0};
};

}  // namespace missy
