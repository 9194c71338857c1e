package session

import (
	"bytes"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestIDString(t *testing.T) {
	tests := []struct {
		id   ID
		want string
	}{
		{0, "0x0"},
		{0x1234abcd, "0x1234abcd"},
		{0x0590_1b52_4c95_0000, "0x5901b524c950000"},
		// Long.toHexString prints negative ids as unsigned.
		{-1, "0xffffffffffffffff"},
		{containerOwner, "0x8000000000000000"},
	}
	for _, tt := range tests {
		if got := tt.id.String(); got != tt.want {
			t.Errorf("ID(%d).String() = %q, want %q", int64(tt.id), got, tt.want)
		}
	}
}

func TestIDLogValue(t *testing.T) {
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("expired", "session", ID(0x1000abc))
	if !strings.Contains(buf.String(), "session=0x1000abc") {
		t.Fatalf("log line %q lacks session=0x1000abc", buf.String())
	}
}

func TestInitialID(t *testing.T) {
	tests := []struct {
		name     string
		serverID uint64
		now      time.Time
		want     ID
	}{
		// 2024-06-15T09:54:56.789Z is 0x190_1b52_4c95 ms. (ms << 24) >>> 8
		// keeps its low 40 bits, 0x90_1b52_4c95, in bytes 2..6; the server
		// id fills the top byte and the low two bytes are zero.
		{"server 5", 5, time.UnixMilli(0x190_1b52_4c95), 0x0590_1b52_4c95_0000},
		{"server 1", 1, time.UnixMilli(0x190_1b52_4c95), 0x0190_1b52_4c95_0000},
		{"sub-millisecond part ignored", 5, time.UnixMilli(0x190_1b52_4c95).Add(999 * time.Microsecond), 0x0590_1b52_4c95_0000},
		{"only the low byte of the server id", 0x105, time.UnixMilli(0x190_1b52_4c95), 0x0590_1b52_4c95_0000},
		// Server 128 at a time whose low 40 bits are zero would produce the
		// container owner; ZooKeeper adds one.
		{"container owner skipped", 128, time.UnixMilli(0x100_0000_0000), containerOwner + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := InitialID(tt.serverID, tt.now); got != tt.want {
				t.Fatalf("InitialID = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGeneratorCounts(t *testing.T) {
	now := time.UnixMilli(0x190_1b52_4c95)
	g := NewGenerator(3, now)
	first := InitialID(3, now)
	for i := range ID(1000) {
		if got := g.Next(); got != first+i {
			t.Fatalf("id %d = %v, want %v", i, got, first+i)
		}
	}
}

func TestGeneratorSkipsReservedIDs(t *testing.T) {
	tests := []struct {
		name  string
		start ID
		want  []ID
	}{
		{"zero", -1, []ID{-1, 1, 2}},
		{"container owner", math.MaxInt64, []ID{math.MaxInt64, containerOwner + 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := new(Generator)
			g.next.Store(int64(tt.start))
			for i, want := range tt.want {
				if got := g.Next(); got != want {
					t.Fatalf("id %d = %v, want %v", i, got, want)
				}
			}
		})
	}
}

func TestGeneratorConcurrent(t *testing.T) {
	g := NewGenerator(1, time.UnixMilli(0x190_1b52_4c95))
	const workers, each = 4, 500
	ids := make([][]ID, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				ids[w] = append(ids[w], g.Next())
			}
		})
	}
	wg.Wait()
	seen := make(map[ID]bool)
	for _, list := range ids {
		for _, id := range list {
			if seen[id] {
				t.Fatalf("id %v handed out twice", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != workers*each {
		t.Fatalf("got %d distinct ids, want %d", len(seen), workers*each)
	}
}
