package proto

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzRequests decodes arbitrary bytes as each client request type; whatever
// decodes must encode and decode again to the same record, and nothing may
// panic.
func FuzzRequests(f *testing.F) {
	for _, r := range samples {
		b := Marshal(r)
		for op := OpCode(-11); op <= 107; op++ {
			if req, ok := NewRequest(op); ok && req != nil && reflect.TypeOf(req) == reflect.TypeOf(r) {
				f.Add(int32(op), b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, op int32, b []byte) {
		req, ok := NewRequest(OpCode(op))
		if !ok || req == nil {
			return
		}
		if Unmarshal(b, req) != nil {
			return
		}
		again, _ := NewRequest(OpCode(op))
		if err := Unmarshal(Marshal(req), again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(req, again) {
			t.Fatalf("re-decode differs:\n%+v\n%+v", req, again)
		}
	})
}

// FuzzReplies does the same for the records a client decodes.
func FuzzReplies(f *testing.F) {
	for i, r := range samples {
		f.Add(uint8(i), Marshal(r))
	}
	// Replies captured from ZooKeeper, each with the index of a sample of
	// its type.
	for _, file := range goldenFiles(f) {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		_, op, _ := strings.Cut(strings.TrimSuffix(filepath.Base(file), ".bin"), "-")
		for i, r := range samples {
			if want := replyFor(op); want != nil && reflect.TypeOf(want) == reflect.TypeOf(r) {
				f.Add(uint8(i), b)
				break
			}
		}
	}
	f.Fuzz(func(t *testing.T, i uint8, b []byte) {
		typ := reflect.TypeOf(samples[int(i)%len(samples)]).Elem()
		r := reflect.New(typ).Interface().(Record)
		if Unmarshal(b, r) != nil {
			return
		}
		again := reflect.New(typ).Interface().(Record)
		if err := Unmarshal(Marshal(r), again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(r, again) {
			t.Fatalf("re-decode differs:\n%+v\n%+v", r, again)
		}
	})
}
