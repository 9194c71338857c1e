package backup

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// WriteFile writes the backup file read from r to path: to a temporary
// file beside it first, checked whole as it arrives, synced, and only
// then renamed to path, so that path never holds a partial or damaged
// file. The file is readable by its owner only: it holds every znode and
// the session secret. When total, the expected length, is large, progress
// is told how far the copy has come once a second. It returns the file's
// header and length.
func WriteFile(path string, r io.Reader, total int64, progress io.Writer) (Header, int64, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, base+".*.part")
	if err != nil {
		return Header{}, 0, fmt.Errorf("backup: %w", err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return Header{}, 0, fmt.Errorf("backup: %w", err)
	}
	if progress == nil {
		progress = io.Discard
	}
	counter := &progressWriter{w: tmp, total: total, out: progress, last: time.Now()}
	h, _, err := Verify(io.TeeReader(r, counter))
	if err != nil {
		return h, 0, fmt.Errorf("backup: the file did not arrive whole (%d bytes received): %w", counter.n, err)
	}
	counter.report(true)
	if err := tmp.Sync(); err != nil {
		return h, 0, fmt.Errorf("backup: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return h, 0, fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return h, 0, fmt.Errorf("backup: %w", err)
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return h, counter.n, nil
}

// progressWriter counts what it writes and tells, once a second, how far
// a large transfer has come.
type progressWriter struct {
	w        io.Writer
	n, total int64
	out      io.Writer
	last     time.Time
	told     bool
}

// progressFrom is the size from which a transfer reports its progress.
const progressFrom = 8 << 20

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.n += int64(n)
	if time.Since(p.last) >= time.Second {
		p.report(false)
	}
	return n, err
}

func (p *progressWriter) report(end bool) {
	if p.total < progressFrom || end && !p.told {
		return
	}
	p.last, p.told = time.Now(), true
	pct := float64(p.n) * 100 / float64(p.total)
	fmt.Fprintf(p.out, "received %.1f of %.1f MiB (%.0f%%)\n", float64(p.n)/(1<<20), float64(p.total)/(1<<20), pct)
}
