package storage_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/server/storage"
)

// BenchmarkSave measures Save, fsync included, by entry size and by how
// many entries one Save carries (the group commit of one raft Ready).
// Throughput counts entry data.
func BenchmarkSave(b *testing.B) {
	for _, size := range []int{100, 1000, 10 << 10} {
		for _, batch := range []int{1, 10, 100, 1000} {
			b.Run(fmt.Sprintf("entry=%d/batch=%d", size, batch), func(b *testing.B) {
				w, err := storage.Create(nil, filepath.Join(b.TempDir(), "wal"), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				data := make([]byte, size)
				for i := range data {
					data[i] = byte(i)
				}
				ents := make([]raftpb.Entry, batch)
				for i := range ents {
					ents[i] = raftpb.Entry{Term: 1, Data: data}
				}
				var index uint64
				b.SetBytes(int64(size * batch))
				b.ReportAllocs()
				for b.Loop() {
					for i := range ents {
						index++
						ents[i].Index = index
					}
					if err := w.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: index}, ents); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
