// `missyd worker`: the command line of a stateless summarization worker (JobWorker).
#pragma once

namespace missy {

// argv[0] is "worker". Returns the process exit code: 0 after SIGTERM/SIGINT, 1 on a
// configuration error, 2 on a usage error.
int WorkerMain(int argc, char** argv);

}  // namespace missy
