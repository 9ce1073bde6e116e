// Synthetic agent sessions for replay tests, unlike the six recorded ones in
// shared/data/trajectories: a Python project whose pytest failures are fixed one by one, a
// Rust crate with rustc/cargo errors, a Go module, a TypeScript app with tsc/npm/jest
// errors, an Elixir/Phoenix app with mix errors, a long session (1,000+ messages, tool
// outputs of 40,000 characters), and (synthetic_toolchains.cpp) Java with Gradle and Maven,
// C++ with CMake, an operator's session, Ruby with RSpec, and a Node.js session from an
// agent that sends outputs back as user messages, and (synthetic_agents.cpp) TypeScript on
// pnpm and node's TAP runner from an agent with Gemini CLI's tools, and C# on dotnet from
// one with Claude Code's, Python from Cline's XML tools and Go from OpenCode's. Each is a list of chat messages as a
// trajectory file gives them (a system prompt, the user's task, assistant tool calls of
// bash/read_file/edit_file/write_file/web_fetch, their results), with what real sessions have and
// the recorded ones lack: one error repeated run after run, errors later fixed, errors a runner
// reported once early, files named once in passing, documentation URLs fetched, and long
// noisy outputs around them.
//
// Deterministic: the same call gives the same messages (a fixed-seed generator, no clock).
#pragma once

#include <string>
#include <vector>

#include "core/message.h"

namespace missy::testing {

struct SyntheticSession {
  std::string name;
  std::vector<Message> messages;
};

SyntheticSession PythonPytestSession();
SyntheticSession RustCargoSession();
SyntheticSession GoModuleSession();
SyntheticSession TypeScriptNpmSession();
SyntheticSession ElixirMixSession();
SyntheticSession LongMixedSession();  // 1,000+ messages, some outputs of 40,000 characters
// synthetic_toolchains.cpp: other toolchains, and an agent that sends outputs as user messages.
SyntheticSession JavaGradleSession();
SyntheticSession CppCmakeSession();
SyntheticSession OpsDeploySession();
SyntheticSession RubyRspecSession();
SyntheticSession NodeObservationsSession();  // `<returncode>` user messages, no tool calls
// synthetic_agents.cpp: other agents' tools and other runners.
SyntheticSession TsPnpmGeminiSession();  // Gemini CLI's framed shell outputs, pnpm, TAP
SyntheticSession CsharpDotnetSession();  // Claude Code's tool names, dotnet build and xUnit
SyntheticSession PythonClineSession();   // Cline's XML tools, results as user messages
SyntheticSession GoOpenCodeSession();    // OpenCode's tools, durations new in every run

// All of the above, in that order.
std::vector<SyntheticSession> SyntheticSessions();

// The session as a trajectory file: one OpenAI-shaped chat message per line.
std::string ToJsonl(const std::vector<Message>& messages);

}  // namespace missy::testing
