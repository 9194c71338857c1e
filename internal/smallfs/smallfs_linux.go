package smallfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new directory and returns the
// directory; it is unmounted when the test ends. Mounting takes
// privileges (root, or CAP_SYS_ADMIN): without them the test is skipped,
// or fails when the environment variable CI is "true".
func Mount(tb testing.TB, size int64) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		skip(tb, "smallfs: cannot mount a tmpfs of %d bytes on %s: %v (mounting needs root or CAP_SYS_ADMIN)", size, dir, err)
	}
	// Registered after TempDir's removal, so it runs before it.
	tb.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			// A process the test started may still hold a file open:
			// detach now, and the kernel unmounts once it lets go.
			if derr := syscall.Unmount(dir, syscall.MNT_DETACH); derr != nil {
				tb.Errorf("smallfs: unmount %s: %v, then %v", dir, err, derr)
			}
		}
	})
	return dir
}

// Free returns the bytes free on the file system holding dir.
func Free(tb testing.TB, dir string) int64 {
	tb.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		tb.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// Fill creates a file in dir that takes all but about free bytes of the
// file system's free space, and returns its path: removing it gives the
// space back. It fails the test when less than free bytes are free.
func Fill(tb testing.TB, dir string, free int64) string {
	tb.Helper()
	avail := Free(tb, dir)
	if avail < free {
		tb.Fatalf("smallfs: %d bytes free in %s, fewer than the %d to leave", avail, dir, free)
	}
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if n := avail - free; n > 0 {
		if err := syscall.Fallocate(int(f.Fd()), 0, 0, n); err != nil && !errors.Is(err, syscall.EOPNOTSUPP) {
			tb.Fatalf("smallfs: fill %s: %v", dir, err)
		} else if err != nil {
			zeros := make([]byte, 1<<20)
			for off := int64(0); off < n; off += int64(len(zeros)) {
				if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), n-off)], off); err != nil {
					tb.Fatalf("smallfs: fill %s: %v", dir, err)
				}
			}
		}
	}
	return path
}
