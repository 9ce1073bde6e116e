// The one reload path (SIGHUP and POST /v1/config/reload): a valid file is swapped in and
// audited as config.reloaded with the keys that changed; an invalid one changes nothing
// and is audited as config.rejected naming the key.
#include "daemon/service/config_reloader.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "daemon/http/api_fixture.h"
#include "daemon/service/config_diff.h"

namespace missy::testing {
namespace {

using Keys = std::vector<std::string>;

constexpr const char* kBase =
    "context:\n"
    "  tokenizer: heuristic\n"
    "  log_level: warn\n"
    "  budget:\n"
    "    total: 90000\n";

class ConfigReloaderTest : public ApiFixture {
 protected:
  void SetUp() override {
    ApiFixture::SetUp();
    WriteConfig(kBase);
    // The running config is the file's, as at start-up.
    Result<DaemonConfig> loaded = LoadConfigFile(config_path(), dir_.path());
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    SetConfig([&](DaemonConfig& c) { c = *loaded; });
  }
  void TearDown() override {
    reloader_.reset();
    ApiFixture::TearDown();
  }

  std::string config_path() const { return dir_.Join("config.yaml"); }
  void WriteConfig(const std::string& yaml) { WriteFileOrDie(config_path(), yaml); }

  ConfigReloader& MakeReloader(std::function<void(DaemonConfig&)> pin = {}) {
    ReloadOptions o;
    o.config_path = config_path();
    o.missy_home = dir_.path();
    o.pin = std::move(pin);
    o.on_begin = [this] { ++begins_; };
    o.on_end = [this](const Status& st) { ends_.push_back(st); };
    reloader_ = std::make_unique<ConfigReloader>(std::move(o), *holder_, *audit_,
                                                 &services_->history, &clock_);
    return *reloader_;
  }

  // The audit events of one type, oldest first.
  std::vector<boost::json::value> Events(const std::string& type) {
    ApiReply r = Call("GET", "/v1/audit?type=" + type);
    EXPECT_EQ(r.status, 200) << r.raw;
    std::vector<boost::json::value> out;
    if (r.status == 200) {
      for (const auto& e : r.body.at("events").as_array()) out.push_back(e);
    }
    return out;
  }

  static Keys Strings(const boost::json::value& array) {
    Keys out;
    for (const auto& v : array.as_array()) out.emplace_back(v.as_string());
    return out;
  }

  std::unique_ptr<ConfigReloader> reloader_;
  int begins_ = 0;
  std::vector<Status> ends_;
};

TEST_F(ConfigReloaderTest, AValidFileIsSwappedInAndTheChangedKeysAudited) {
  ConfigReloader& reloader = MakeReloader();
  WriteConfig(std::string(kBase) +
              "  limits:\n"
              "    cache_idle_seconds: 5\n"
              "providers:\n"
              "  openai:\n"
              "    model: gpt-4o\n"
              "    api_key: sk-secret-123\n");
  const auto before = holder_->Get();
  Result<ReloadOutcome> r = reloader.Reload();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->changed, (Keys{"context.limits.cache_idle_seconds", "providers.openai"}));
  EXPECT_TRUE(r->restart_required.empty());
  const auto after = holder_->Get();
  EXPECT_NE(after, before);
  EXPECT_EQ(after->limits.cache_idle_seconds, 5);
  EXPECT_EQ(after->providers.at("openai").model, "gpt-4o");
  EXPECT_EQ(before->limits.cache_idle_seconds, 60);  // a snapshot taken earlier is intact

  std::vector<boost::json::value> events = Events("config.reloaded");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].at("result").as_string(), "allow");
  EXPECT_EQ(events[0].at("detail").at("path").as_string(), config_path());
  EXPECT_EQ(Strings(events[0].at("detail").at("changed")),
            (Keys{"context.limits.cache_idle_seconds", "providers.openai"}));
  EXPECT_EQ(boost::json::serialize(events[0]).find("sk-secret-123"), std::string::npos);
  EXPECT_EQ(begins_, 1);
  ASSERT_EQ(ends_.size(), 1u);
  EXPECT_TRUE(ends_[0].ok());

  // The same file again: nothing changed.
  Result<ReloadOutcome> again = reloader.Reload();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->changed.empty());
}

TEST_F(ConfigReloaderTest, AnInvalidFileKeepsTheConfigAndIsRejectedNamingTheKey) {
  ConfigReloader& reloader = MakeReloader();
  WriteConfig("context:\n  tokenizer: heuristic\n  budget:\n    total: many\n");
  const auto before = holder_->Get();
  Result<ReloadOutcome> r = reloader.Reload();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnprocessable);
  EXPECT_EQ(r.status().field(), "context.budget.total");
  EXPECT_NE(r.status().message().find("context.budget.total"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(holder_->Get(), before);
  EXPECT_EQ(holder_->Get()->budget.total, 90000);

  std::vector<boost::json::value> events = Events("config.rejected");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].at("result").as_string(), "error");
  EXPECT_EQ(events[0].at("detail").at("key").as_string(), "context.budget.total");
  EXPECT_EQ(events[0].at("detail").at("error").as_string(), r.status().message());
  EXPECT_TRUE(Events("config.reloaded").empty());
  EXPECT_TRUE(Events("config.reload_failed").empty());  // the old name is gone
  ASSERT_EQ(ends_.size(), 1u);
  EXPECT_EQ(ends_[0].field(), "context.budget.total");
}

TEST_F(ConfigReloaderTest, CrossKeyRulesRejectToo) {
  ConfigReloader& reloader = MakeReloader();
  WriteConfig(
      "context:\n  tokenizer: heuristic\n  budget:\n"
      "    memory_fraction: 0.8\n    learnings_fraction: 0.5\n");
  Result<ReloadOutcome> r = reloader.Reload();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnprocessable);
  EXPECT_EQ(r.status().field().rfind("context.budget.", 0), 0u) << r.status().field();
  EXPECT_EQ(holder_->Get()->budget.total, 90000);
}

TEST_F(ConfigReloaderTest, AMissingFileIsRejectedAndKeepsTheConfig) {
  ConfigReloader& reloader = MakeReloader();
  std::remove(config_path().c_str());
  const auto before = holder_->Get();
  Result<ReloadOutcome> r = reloader.Reload();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnprocessable);
  EXPECT_NE(r.status().message().find(config_path()), std::string::npos);
  EXPECT_EQ(holder_->Get(), before);
}

TEST_F(ConfigReloaderTest, StartupOnlyKeysKeepTheirValueUntilARestart) {
  ConfigReloader& reloader = MakeReloader();
  const std::string socket_before = holder_->Get()->socket_path;
  WriteConfig(std::string(kBase) +
              "  socket: elsewhere.sock\n"
              "  limits:\n"
              "    max_body_bytes: 1024\n"
              "    memory_mb: 128\n");
  Result<ReloadOutcome> r = reloader.Reload();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->restart_required, (Keys{"context.socket", "context.limits.max_body_bytes"}));
  EXPECT_EQ(r->changed, (Keys{"context.limits.memory_mb"}));
  EXPECT_EQ(holder_->Get()->socket_path, socket_before);
  EXPECT_EQ(holder_->Get()->limits.max_body_bytes, 8 * 1024 * 1024);
  EXPECT_EQ(holder_->Get()->limits.memory_mb, 128);
  std::vector<boost::json::value> events = Events("config.reloaded");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(Strings(events[0].at("detail").at("restart_required")),
            (Keys{"context.socket", "context.limits.max_body_bytes"}));
}

TEST_F(ConfigReloaderTest, PinnedValuesSurviveAReload) {
  // --log-level and a socket adopted from systemd win over the file, on every reload.
  ConfigReloader& reloader = MakeReloader([](DaemonConfig& c) {
    c.log_level = "warn";
    c.socket_path = "/run/user/1000/missy/missyd.sock";
  });
  SetConfig([](DaemonConfig& c) { c.socket_path = "/run/user/1000/missy/missyd.sock"; });
  WriteConfig(
      "context:\n  tokenizer: heuristic\n  log_level: debug\n  budget:\n    total: 90000\n");
  Result<ReloadOutcome> r = reloader.Reload();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->changed.empty()) << r->changed.front();
  EXPECT_TRUE(r->restart_required.empty());
  EXPECT_EQ(holder_->Get()->log_level, "warn");
  EXPECT_EQ(holder_->Get()->socket_path, "/run/user/1000/missy/missyd.sock");
}

TEST_F(ConfigReloaderTest, TheRouteSharesThePathAndAnswersTheChangedKeys) {
  MakeReloader();
  WriteConfig(
      "context:\n  tokenizer: heuristic\n  log_level: warn\n  budget:\n    total: 100000\n");
  ApiReply ok = Call("POST", "/v1/config/reload");
  ASSERT_EQ(ok.status, 200) << ok.raw;
  EXPECT_EQ(ok.raw,
            R"({"reloaded":true,"changed":["context.budget.total"],"restart_required":[]})"
            "\n");
  EXPECT_EQ(holder_->Get()->budget.total, 100000);
  EXPECT_EQ(Call("GET", "/v1/config").body.at("context").at("budget").at("total").as_int64(),
            100000);

  WriteConfig("context:\n  budget:\n    total: many\n");
  ApiReply bad = Call("POST", "/v1/config/reload", "{}");
  EXPECT_TRUE(IsError(bad, 422, "unprocessable", "context.budget.total"));
  EXPECT_NE(ErrorMessage(bad).find("context.budget.total"), std::string::npos);
  EXPECT_EQ(holder_->Get()->budget.total, 100000);
  EXPECT_EQ(Events("config.rejected").size(), 1u);

  EXPECT_TRUE(IsError(Call("POST", "/v1/config/reload", R"({"force":true})"), 400,
                      "invalid_argument", "force"));
  EXPECT_EQ(Call("GET", "/v1/config/reload").status, 405);
  EXPECT_EQ(begins_, 2);  // the 400 never reached the reloader
}

TEST_F(ConfigReloaderTest, TheRouteWithoutAReloaderIsUnavailable) {
  // An Api over services without a reloader (tests, tools): 503, nothing changes.
  EXPECT_EQ(ConfigReloader::For(holder_.get()), nullptr);
  EXPECT_TRUE(IsError(Call("POST", "/v1/config/reload"), 503, "unavailable", ""));
  MakeReloader();
  EXPECT_EQ(ConfigReloader::For(holder_.get()), reloader_.get());
  reloader_.reset();
  EXPECT_EQ(ConfigReloader::For(holder_.get()), nullptr);
}

TEST(ConfigDiffTest, ListsKeysByNameNeverValues) {
  DaemonConfig a, b;
  EXPECT_TRUE(ChangedConfigKeys(a, b).empty());
  b.budget.total = a.budget.total + 1;
  b.strict = !a.strict;
  b.tokenizer = TokenizerMode::kHeuristic;
  b.models.Upsert(ModelSpec{"my-model", 32000, 4000, "cl100k_base", 1.0});
  b.default_provider = "local";
  b.providers["local"].api_key = "secret";
  EXPECT_EQ(ChangedConfigKeys(a, b),
            (Keys{"context.budget.total", "context.strict", "context.tokenizer", "context.models",
                  "default_provider", "providers.local"}));
  // An api key change alone is reported by the provider's name.
  DaemonConfig c = b;
  c.providers["local"].api_key = "other";
  EXPECT_EQ(ChangedConfigKeys(b, c), (Keys{"providers.local"}));
}

}  // namespace
}  // namespace missy::testing
