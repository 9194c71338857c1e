//go:build !linux

package zkref

import "os/exec"

// dieWithParent does nothing where the kernel has no parent-death signal;
// t.Cleanup still kills the server.
func dieWithParent(*exec.Cmd) {}
