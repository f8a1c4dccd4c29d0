#pragma once

namespace kbench {

// Whether kbench is being interrupted (a SIGINT, SIGTERM or SIGHUP that it obeys): long waits
// end early. Set once by orchestrator/run/interruption; read by anything that waits.
bool interrupted();
void mark_interrupted();

}  // namespace kbench
