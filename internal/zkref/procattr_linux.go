package zkref

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the server if the test binary dies
// without running its cleanups (a -timeout panic, a kill), so no JVM outlives
// the test and keeps its port.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
