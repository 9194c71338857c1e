//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package storage

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive lock on an open directory. The lock belongs to
// this open file, so a second open of the same directory, even in this
// process, cannot take it; closing the file releases it.
func lockDir(d *os.File) error {
	for {
		err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("%w: %s is held by another process, most likely a server still running on this data; stop it first", ErrLocked, d.Name())
		case !errors.Is(err, syscall.EINTR):
			return err
		}
	}
}
