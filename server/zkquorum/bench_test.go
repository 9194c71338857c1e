package zkquorum

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"testing"
)

// BenchmarkSnapshotTransfer measures how fast a SNAP payload goes from the
// leader's stream to the caller's reader: the scan for its end and the pipe.
func BenchmarkSnapshotTransfer(b *testing.B) {
	for _, nodes := range []int{1_000, 100_000} {
		paths := make([]string, nodes)
		for i := range paths {
			paths[i] = fmt.Sprintf("/app/service-%03d/instance-%06d", i%100, i)
		}
		payload := snapshotPayload(paths...)
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				in := &juteReader{r: bufio.NewReaderSize(bytes.NewReader(payload), 64<<10), max: DefaultMaxPacket}
				s := startSnapshot(in)
				n, err := io.Copy(io.Discard, s.pr)
				if err != nil || s.wait() != nil || n != int64(len(payload)) {
					b.Fatalf("copied %d of %d bytes: %v", n, len(payload), err)
				}
			}
		})
	}
}
