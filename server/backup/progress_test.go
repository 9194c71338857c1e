package backup

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// TestProgress: a large transfer tells how far it has come once a
// second and when it ends; a small one says nothing.
func TestProgress(t *testing.T) {
	var out bytes.Buffer
	p := &progressWriter{w: io.Discard, total: 64 << 20, out: &out, last: time.Now()}
	p.Write(make([]byte, 1<<20))
	if out.Len() != 0 {
		t.Fatalf("progress within the first second: %q", out.String())
	}
	p.last = time.Now().Add(-time.Second)
	p.Write(make([]byte, 15<<20))
	p.n = 64 << 20
	p.report(true)
	if got := out.String(); got != "received 16.0 of 64.0 MiB (25%)\nreceived 64.0 of 64.0 MiB (100%)\n" {
		t.Fatalf("progress:\n%s", got)
	}
	out.Reset()
	small := &progressWriter{w: io.Discard, total: 1 << 20, out: &out, last: time.Now().Add(-time.Hour)}
	small.Write(make([]byte, 1<<20))
	small.report(true)
	if out.Len() != 0 {
		t.Fatalf("progress of a small transfer: %q", out.String())
	}
}
