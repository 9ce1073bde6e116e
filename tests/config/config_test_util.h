// Helpers shared by the config tests: parsing that fails the test, the documented
// defaults, and an explicit list of every DaemonConfig member (the oracle the table-driven
// tests compare configs with, written by hand so that it does not trust the key table).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <iomanip>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"

namespace missy::testing {

inline constexpr char kHome[] = "/home/u/.missy";

// Sets an environment variable for the scope of a test, restoring it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

inline DaemonConfig ParseOrDie(const std::string& yaml, const std::string& home = kHome) {
  Result<DaemonConfig> r = ParseConfig(yaml, home);
  EXPECT_TRUE(r.ok()) << r.status().message() << "\n--- yaml:\n" << yaml;
  return r.ok() ? std::move(r).value() : DaemonConfig{};
}

// The defaults as documented (README, DESIGN.md), with paths resolved against kHome.
inline void ExpectDefaults(const DaemonConfig& c) {
  EXPECT_EQ(c.missy_home, kHome);
  EXPECT_EQ(c.socket_path, "/home/u/.missy/missyd.sock");
  EXPECT_EQ(c.audit_socket_path, "/home/u/.missy/audit.sock");
  EXPECT_EQ(c.database_path, "/home/u/.missy/missyd.db");
  EXPECT_EQ(c.data_dir, "");
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.budget.total, 30000);
  EXPECT_EQ(c.budget.system_reserve, 2000);
  EXPECT_EQ(c.budget.tool_definitions_reserve, 2000);
  EXPECT_DOUBLE_EQ(c.budget.memory_fraction, 0.15);
  EXPECT_DOUBLE_EQ(c.budget.learnings_fraction, 0.05);
  EXPECT_EQ(c.budget.fresh_tail_count, 16);
  EXPECT_EQ(c.limits.max_body_bytes, 8 * 1024 * 1024);
  EXPECT_EQ(c.limits.read_timeout_ms, 30000);
  EXPECT_EQ(c.limits.audit_client_buffer_bytes, 4 * 1024 * 1024);
  EXPECT_EQ(c.limits.memory_mb, 256);
  EXPECT_EQ(c.limits.cache_idle_seconds, 60);
  EXPECT_EQ(c.audit.retention_days, 30);
  EXPECT_EQ(c.audit.retention_events, 1000000);
  EXPECT_EQ(c.audit.mirror, "");
  EXPECT_EQ(c.audit.mirror_max_bytes, 64 << 20);
  EXPECT_EQ(c.audit.mirror_files, 5);
  EXPECT_EQ(c.broker.url, "");
  EXPECT_EQ(c.broker.subject_prefix, "missy");
  EXPECT_TRUE(c.broker.audit);
  EXPECT_FALSE(c.broker.jobs);
  EXPECT_EQ(c.broker.job_timeout_ms, 120000);
  EXPECT_EQ(c.broker.job_ack_wait_ms, 30000);
  EXPECT_EQ(c.broker.job_max_deliver, 3);
  EXPECT_EQ(c.broker.jobs_in_flight, 8);
  EXPECT_FALSE(c.proxy.enabled);
  EXPECT_EQ(c.proxy.listen, std::vector<std::string>{"127.0.0.1:8788"});
  EXPECT_EQ(c.proxy.token_file, "");
  EXPECT_TRUE(c.proxy.memory);
  EXPECT_EQ(c.proxy.anthropic_upstream, "https://api.anthropic.com");
  EXPECT_EQ(c.proxy.openai_upstream, "https://api.openai.com/v1");
  EXPECT_EQ(c.proxy.timeout_ms, 600000);
  EXPECT_EQ(c.proxy.max_body_bytes, 256 << 20);
  EXPECT_TRUE(c.proxy.routes.empty());
  EXPECT_TRUE(c.ui.enabled);
  EXPECT_TRUE(c.ui.listen.empty());
  EXPECT_DOUBLE_EQ(c.context.threshold_pct, 0.75);
  EXPECT_EQ(c.context.message_threshold, 200);
  EXPECT_EQ(c.context.tool_output_max_tokens, 2500);
  EXPECT_FALSE(c.strict);
  EXPECT_EQ(c.pruning.protect_user_turns, 2);
  EXPECT_EQ(c.pruning.protect_tool_tokens, 40000);
  EXPECT_EQ(c.pruning.minimum_freed_tokens, 20000);
  EXPECT_EQ(c.tokenizer, TokenizerMode::kExact);
  EXPECT_EQ(c.image_tokens, 765);
  EXPECT_DOUBLE_EQ(c.calibration.min_ratio, 0.7);
  EXPECT_DOUBLE_EQ(c.calibration.max_ratio, 1.6);
  EXPECT_DOUBLE_EQ(c.calibration.alpha, 0.2);
  EXPECT_EQ(c.models.rows(), ModelTable::Builtin().rows());
  EXPECT_EQ(c.default_provider, "");
  EXPECT_TRUE(c.providers.empty());
}

// A default-constructed DaemonConfig as ParseConfig returns it for an empty document:
// missy_home set and the relative default paths resolved under it.
inline DaemonConfig ResolvedDefaults(const std::string& home = kHome) {
  DaemonConfig c;
  c.missy_home = home;
  c.socket_path = home + "/" + c.socket_path;
  c.audit_socket_path = home + "/" + c.audit_socket_path;
  c.database_path = home + "/" + c.database_path;
  return c;
}

// Every member of a DaemonConfig, core structs included, as (name, value text), in
// declaration order. Names are C++ member paths ("pruning.protect_user_turns").
inline std::vector<std::pair<std::string, std::string>> Members(const DaemonConfig& c) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto add = [&out](const char* name, const auto& value) {
    std::ostringstream ss;
    ss << std::setprecision(17) << value;
    out.emplace_back(name, ss.str());
  };
  add("missy_home", c.missy_home);
  add("socket_path", c.socket_path);
  add("audit_socket_path", c.audit_socket_path);
  add("database_path", c.database_path);
  add("data_dir", c.data_dir);
  add("log_level", c.log_level);
  add("budget.total", c.budget.total);
  add("budget.system_reserve", c.budget.system_reserve);
  add("budget.tool_definitions_reserve", c.budget.tool_definitions_reserve);
  add("budget.memory_fraction", c.budget.memory_fraction);
  add("budget.learnings_fraction", c.budget.learnings_fraction);
  add("budget.fresh_tail_count", c.budget.fresh_tail_count);
  add("context.threshold_pct", c.context.threshold_pct);
  add("context.message_threshold", c.context.message_threshold);
  add("context.tool_output_max_tokens", c.context.tool_output_max_tokens);
  add("context.min_tool_output_tokens", c.context.min_tool_output_tokens);
  add("context.max_learnings", c.context.max_learnings);
  add("context.eviction_slack_fraction", c.context.eviction_slack_fraction);
  add("context.task_max_tokens", c.context.task_max_tokens);
  add("context.summarize_evicted", c.context.summarize_evicted);
  add("context.squeeze_at_move", c.context.squeeze_at_move);
  add("strict", c.strict);
  add("pruning.enabled", c.pruning.enabled);
  add("pruning.protect_user_turns", c.pruning.protect_user_turns);
  add("pruning.protect_tool_tokens", c.pruning.protect_tool_tokens);
  add("pruning.minimum_freed_tokens", c.pruning.minimum_freed_tokens);
  add("summarizer.leaf_chunk_tokens", c.summarizer.leaf_chunk_tokens);
  add("summarizer.condensed_fanout", c.summarizer.condensed_fanout);
  add("summarizer.leaf_target_tokens", c.summarizer.leaf_target_tokens);
  add("summarizer.condensed_target_tokens", c.summarizer.condensed_target_tokens);
  add("summarizer_backend.backend", c.summarizer_backend.backend);
  add("summarizer_backend.provider", c.summarizer_backend.provider);
  add("tokenizer", TokenizerModeName(c.tokenizer));
  add("image_tokens", c.image_tokens);
  add("calibration.alpha", c.calibration.alpha);
  add("calibration.min_ratio", c.calibration.min_ratio);
  add("calibration.max_ratio", c.calibration.max_ratio);
  add("calibration.first_sample_sets_ratio", c.calibration.first_sample_sets_ratio);
  add("limits.max_body_bytes", c.limits.max_body_bytes);
  add("limits.read_timeout_ms", c.limits.read_timeout_ms);
  add("limits.audit_client_buffer_bytes", c.limits.audit_client_buffer_bytes);
  add("limits.memory_mb", c.limits.memory_mb);
  add("limits.cache_idle_seconds", c.limits.cache_idle_seconds);
  add("audit.retention_days", c.audit.retention_days);
  add("audit.retention_events", c.audit.retention_events);
  add("audit.mirror", c.audit.mirror);
  add("audit.mirror_max_bytes", c.audit.mirror_max_bytes);
  add("audit.mirror_files", c.audit.mirror_files);
  add("broker.url", c.broker.url);
  add("broker.user", c.broker.user);
  add("broker.password", c.broker.password);
  add("broker.token", c.broker.token);
  add("broker.subject_prefix", c.broker.subject_prefix);
  add("broker.daemon_id", c.broker.daemon_id);
  add("broker.creds_file", c.broker.creds_file);
  add("broker.ca_file", c.broker.ca_file);
  add("broker.audit", c.broker.audit);
  add("broker.jobs", c.broker.jobs);
  add("broker.job_timeout_ms", c.broker.job_timeout_ms);
  add("broker.job_ack_wait_ms", c.broker.job_ack_wait_ms);
  add("broker.job_max_deliver", c.broker.job_max_deliver);
  add("broker.jobs_in_flight", c.broker.jobs_in_flight);
  add("proxy.enabled", c.proxy.enabled);
  std::string listen;
  for (const std::string& l : c.proxy.listen) listen += l + ';';
  add("proxy.listen", listen);
  add("proxy.memory", c.proxy.memory);
  add("proxy.token_file", c.proxy.token_file);
  add("proxy.anthropic_upstream", c.proxy.anthropic_upstream);
  add("proxy.openai_upstream", c.proxy.openai_upstream);
  add("proxy.timeout_ms", c.proxy.timeout_ms);
  add("proxy.max_body_bytes", c.proxy.max_body_bytes);
  std::string routes;
  for (const ProxyRoute& r : c.proxy.routes) routes += r.model + '|' + r.provider + ';';
  add("proxy.routes", routes);
  add("ui.enabled", c.ui.enabled);
  std::string ui_listen;
  for (const std::string& l : c.ui.listen) ui_listen += l + ';';
  add("ui.listen", ui_listen);
  std::ostringstream models;
  models << std::setprecision(17);
  for (const ModelSpec& m : c.models.rows()) {
    models << m.pattern << '|' << m.context_window << '|' << m.max_output_tokens << '|'
           << m.encoding << '|' << m.factor << ';';
  }
  add("models", models.str());
  add("default_provider", c.default_provider);
  std::ostringstream providers;
  for (const auto& [name, p] : c.providers) {
    providers << name << '|' << p.model << '|' << p.base_url << '|' << p.api_key << '|'
              << p.timeout_s << ';';
  }
  add("providers", providers.str());
  return out;
}

// The members of `a` and `b` that differ, as "name: a-value -> b-value".
inline std::vector<std::string> DifferingMembers(const DaemonConfig& a, const DaemonConfig& b) {
  const auto ma = Members(a);
  const auto mb = Members(b);
  std::vector<std::string> out;
  for (size_t i = 0; i < ma.size(); ++i) {
    if (ma[i].second != mb[i].second) {
      out.push_back(ma[i].first + ": " + ma[i].second + " -> " + mb[i].second);
    }
  }
  return out;
}

}  // namespace missy::testing
