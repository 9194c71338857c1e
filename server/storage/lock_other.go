//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package storage

import "os"

// lockDir does nothing where flock is missing: one writer per directory is
// then the caller's responsibility.
func lockDir(*os.File) error { return nil }
