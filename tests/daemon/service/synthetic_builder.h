// The session builder shared by the synthetic sessions (synthetic_sessions.h): a
// deterministic word picker, a message list that pairs every call with its result, and
// plausible listings, prose and logs. Test-only, internal to those files.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/message.h"

namespace missy::testing::synthetic {

// A tiny deterministic generator (the numbers only pick words; no statistics needed).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  uint64_t Next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return s_;
  }
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }
  template <typename T>
  const T& Of(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

 private:
  uint64_t s_;
};

inline const std::vector<std::string> kWords = {
    "item",  "stock", "price", "order", "batch", "sku",    "count", "total", "ledger",
    "entry", "row",   "field", "value", "cache", "config", "parse", "load",  "store",
    "user",  "token", "index", "query", "limit", "offset", "page",  "range", "event"};

enum class Lang { kPython, kRust, kGo, kTs, kElixir, kJava, kCpp, kRuby, kYaml };

// Builds a session message by message.
class Builder {
 public:
  Builder(const std::string& system, uint64_t seed) : rng_(seed) {
    out_.push_back(Message::System(system));
  }
  Rng& rng() { return rng_; }
  // The agent's text goes with its next tool call, in the same message (an assistant
  // message right before another is not valid history: core/sanitizer.h), or alone when
  // the user speaks next or the session ends.
  void User(std::string text) {
    FlushSay();
    out_.push_back(Message::User(std::move(text)));
  }
  void Say(std::string text) { pending_ += (pending_.empty() ? "" : "\n\n") + text; }
  void Call(const std::string& tool, const boost::json::object& args, std::string output,
            std::string say = {}) {
    if (!pending_.empty()) say = pending_ + (say.empty() ? "" : "\n\n" + say);
    pending_.clear();
    char id[32];
    std::snprintf(id, sizeof id, "call_%05d", ++calls_);
    out_.push_back(Message::AssistantCalls(
        {ToolCall{id, "function", tool, boost::json::serialize(args)}}, std::move(say)));
    out_.push_back(Message::ToolResult(id, std::move(output), tool));
  }
  void Bash(const std::string& cmd, std::string output, std::string say = {}) {
    Call("bash", {{"command", cmd}}, std::move(output), std::move(say));
  }
  void Read(const std::string& path, Lang lang, int lines) {
    Call("read_file", {{"path", path}}, Code(lang, lines, 1 + static_cast<int>(rng_.Below(40))));
  }
  void Edit(const std::string& path, const std::string& old_text, const std::string& new_text,
            std::string say = {}) {
    Call("edit_file", {{"path", path}, {"old_str", old_text}, {"new_str", new_text}},
         "The file " + path + " has been edited successfully.", std::move(say));
  }
  void Write(const std::string& path, const std::string& content) {
    Call("write_file", {{"path", path}, {"content", content}},
         "File created successfully at: " + path);
  }
  void Fetch(const std::string& url, int paragraphs) {
    Call("web_fetch", {{"url", url}, {"prompt", "the parts about " + rng_.Of(kWords)}},
         Prose(paragraphs));
  }
  std::vector<Message> Take() {
    FlushSay();
    return std::move(out_);
  }
  size_t size() const { return out_.size(); }

  std::string Ident() { return rng_.Of(kWords) + "_" + rng_.Of(kWords); }

  // A numbered listing (cat -n) of plausible source: code names errors ("raise
  // ValueError", "{:error, reason}") without reporting one.
  std::string Code(Lang lang, int lines, int first) {
    static const std::map<Lang, std::vector<std::string>> kLines = {
        {Lang::kPython,
         {"def {f}({a}, {b}=None):", "    {a} = {b}.get(\"{k}\", 0)",
          "    if not {a}:", "        raise ValueError(f\"bad {k}: {{{a}}}\")", "    return {a}",
          "    except KeyError as exc:", "        logger.error(\"missing %s\", exc)",
          "from inventory.{k} import {f}", "    # {k} is optional for legacy rows", ""}},
        {Lang::kRust,
         {"fn {f}({a}: &str) -> Result<u32, ParseError> {", "    let {a} = {b}.parse::<u32>()?;",
          "        None => return Err(ParseError::Empty),", "    }", "}",
          "use crate::{k}::{{{f}, Entry}};", "    // {k}: checked by the caller", "",
          "    Ok({a} as u32)"}},
        {Lang::kGo,
         {"func {f}({a} string) (int, error) {", "\t{a}, err := strconv.Atoi({b})",
          "\tif err != nil {", "\t\treturn 0, fmt.Errorf(\"parse {k}: %w\", err)", "\t}", "}",
          "\t// {k} is never negative", ""}},
        {Lang::kTs,
         {"export async function {f}({a}: string): Promise<number> {",
          "  const {a} = await {b}.{f}({k});", "  if (!{a}) throw new Error(`missing {k}`);",
          "  return {a}.length;", "}", "import { {f} } from './{k}';", "  // {k} may be empty",
          ""}},
        {Lang::kJava,
         {"    public int {f}(String {a}) {",
          "        if ({a} == null) throw new "
          "IllegalArgumentException(\"{k}\");",
          "        return {b}.get({a}).size();", "    }", "import com.acme.{k}.{f};",
          "    // {k} is cached per request",
          "    private final Map<String, Integer> {b} = new HashMap<>();", ""}},
        {Lang::kCpp,
         {"int {f}(const std::string& {a}) {",
          "  if ({a}.empty()) throw std::runtime_error"
          "(\"empty {k}\");",
          "  return static_cast<int>({b}.size());", "}", "#include \"geo/{k}.h\"",
          "  // {k}: owned by the caller", "  std::vector<int> {b};", ""}},
        {Lang::kRuby,
         {"  def {f}({a})", "    raise ArgumentError, \"bad {k}\" if {a}.nil?",
          "    @{b}.fetch({a}, 0)", "  end", "  # {k} is optional for imported rows",
          "  has_many :{b}", ""}},
        {Lang::kYaml,
         {"  {k}:", "    image: registry.local/{k}:1.{a}", "    replicas: 2",
          "    # {k} is scaled by the HPA", "  - name: {f}", "    port: 8080", ""}},
        {Lang::kElixir,
         {"  def {f}({a}, {b}) do", "    case Repo.get({a}, {b}) do",
          "      nil -> {:error, :not_found}", "      {k} -> {:ok, {k}}", "    end", "  end",
          "  @doc \"Loads the {k}.\"", ""}},
    };
    const std::vector<std::string>& templates = kLines.at(lang);
    std::string out;
    for (int i = 0; i < lines; ++i) {
      std::string line = rng_.Of(templates);
      for (const auto& [from, to] :
           std::vector<std::pair<std::string, std::string>>{{"{f}", Ident()},
                                                            {"{a}", rng_.Of(kWords)},
                                                            {"{b}", rng_.Of(kWords) + "s"},
                                                            {"{k}", rng_.Of(kWords)}}) {
        for (size_t p = line.find(from); p != std::string::npos; p = line.find(from, p + 1)) {
          line.replace(p, from.size(), to);
        }
      }
      char num[16];
      std::snprintf(num, sizeof num, "%6d\t", first + i);
      out += num + line + "\n";
    }
    return out;
  }

  // Documentation prose.
  std::string Prose(int paragraphs) {
    std::string out;
    for (int p = 0; p < paragraphs; ++p) {
      for (int s = 0; s < 5; ++s) {
        out +=
            "The " + rng_.Of(kWords) + " option controls how each " + rng_.Of(kWords) + " is " +
            rng_.Of(std::vector<std::string>{"read", "cached", "validated", "written", "merged"}) +
            " before the " + rng_.Of(kWords) + " is returned. ";
      }
      out += "\n\n";
    }
    return out;
  }

  // `n` lines of a noisy but harmless log.
  std::string Log(const std::string& stem, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) {
      out += stem + " " + rng_.Of(kWords) + "/" + Ident() + " ok (" +
             std::to_string(rng_.Below(900) + 10) + "ms)\n";
    }
    return out;
  }

 private:
  void FlushSay() {
    if (!pending_.empty()) out_.push_back(Message::Assistant(std::move(pending_)));
    pending_.clear();
  }

  Rng rng_;
  std::vector<Message> out_;
  std::string pending_;  // said, not yet sent
  int calls_ = 0;
};

// --- A compile-and-test loop shared by the other languages -------------------------------

// One reported problem: the file it is in, what the tool prints for it, and what fixes it.
struct Problem {
  std::string file;
  std::string block;  // printed by every run until it is fixed
};

struct Loop {
  Lang lang;
  std::string check;  // the command rerun after each fix
  std::vector<Problem> problems;
  // The output of `check` with `open` problems still there.
  std::string (*run)(Builder&, const std::vector<Problem>& open);
  int reads_per_fix = 4;    // files read and searched between two fixes
  int listing_lines = 120;  // lines per file read
};

// Fixes the loop's problems one by one: runs the check, reads and searches around, edits,
// and between fixes runs `side` (one-off commands: typos, missing files, documentation).
template <typename Side>
inline void FixOneByOne(Builder& b, Loop loop, const std::vector<std::string>& files, Side side) {
  b.Bash(loop.check, loop.run(b, loop.problems), "Let me build it and see what fails.");
  int round = 0;
  while (!loop.problems.empty()) {
    const Problem p = loop.problems.front();
    for (int k = 0; k < loop.reads_per_fix; ++k) {
      b.Read(k == 0 ? p.file : files[b.rng().Below(files.size())], loop.lang,
             loop.listing_lines + 15 * k);
      b.Bash("grep -rn \"" + b.rng().Of(kWords) + "\" " +
                 files[b.rng().Below(files.size())].substr(0, 3) + " | head -30",
             b.Code(loop.lang, 25, 1));
      if (k % 2 == 1) b.Bash(loop.check, loop.run(b, loop.problems));
    }
    side(b, round);
    b.Edit(p.file, "/* before */", "/* after */", "Fixing the error in " + p.file + ".");
    loop.problems.erase(loop.problems.begin());
    b.Bash(loop.check, loop.run(b, loop.problems));
    ++round;
  }
}

inline std::string Join(const std::vector<Problem>& open) {
  std::string out;
  for (const Problem& p : open) out += p.block + "\n";
  return out;
}

}  // namespace missy::testing::synthetic
