package smallfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/collie-io/collie/internal/smallfs"
)

// A mounted file system holds what its size allows; Fill leaves about
// what it is asked to, and removing the filler gives the space back.
func TestMountAndFill(t *testing.T) {
	dir := smallfs.Mount(t, 4<<20)
	filler := smallfs.Fill(t, dir, 1<<20)
	if free := smallfs.Free(t, dir); free < 1<<20-64<<10 || free > 1<<20+64<<10 {
		t.Fatalf("%d bytes free after Fill, want about 1 MiB", free)
	}
	big := make([]byte, 2<<20)
	err := os.WriteFile(filepath.Join(dir, "big"), big, 0o600)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing 2 MiB to a file system with 1 MiB free: %v, want ENOSPC", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), big, 0o600); err != nil {
		t.Fatalf("writing 2 MiB once the filler is gone: %v", err)
	}
}
