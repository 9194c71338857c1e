package queue

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFraming checks the bytes of Curator's ItemSerializer framing, and
// that what it frames reads back.
func TestFraming(t *testing.T) {
	got := encodeValues([][]byte{[]byte("hi"), {}})
	want := []byte{
		0x00, 0x01, 0x00, 0x01, // version
		0x01, 0x00, 0x00, 0x00, 0x02, 'h', 'i', // item "hi"
		0x01, 0x00, 0x00, 0x00, 0x00, // item ""
		0x02, // end
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("framed % x, want % x", got, want)
	}
	values, err := decodeValues(append(got, "trailing bytes Curator ignores"...))
	if err != nil {
		t.Fatal(err)
	}
	if len(values) != 2 || string(values[0]) != "hi" || len(values[1]) != 0 {
		t.Errorf("decoded %q", values)
	}

	for _, bad := range [][]byte{
		nil,
		[]byte("hello"),
		{0x00, 0x01, 0x00, 0x01},             // no end
		{0x00, 0x01, 0x00, 0x01, 0x07, 0x02}, // unknown opcode
		{0x00, 0x01, 0x00, 0x01, 0x01, 0x00, 0x00},       // truncated length
		{0x00, 0x01, 0x00, 0x01, 0x01, 0, 0, 0, 9, 'x'},  // value longer than the data
		{0x00, 0x01, 0x00, 0x02, 0x02},                   // other version
		{0x00, 0x01, 0x00, 0x01, 0x01, 0xff, 0xff, 0xff}, // truncated, huge length
	} {
		if values, err := decodeValues(bad); err == nil {
			t.Errorf("decodeValues(% x) = %q, want an error", bad, values)
		}
	}
}

// TestPriorityNames checks Curator's priority encoding and that names sort
// as their priorities.
func TestPriorityNames(t *testing.T) {
	for priority, want := range map[int32]string{
		0:             "100000000",
		5:             "100000005",
		-1:            "0FFFFFFFF",
		math.MinInt32: "080000000",
		math.MaxInt32: "17FFFFFFF",
	} {
		if got := priorityName(priority); got != want {
			t.Errorf("priorityName(%d) = %q, want %q", priority, got, want)
		}
	}
	priorities := []int32{math.MinInt32, math.MaxInt32, 0, -1, 1}
	for range 200 {
		priorities = append(priorities, rand.Int32()-rand.Int32())
	}
	names := make([]string, len(priorities))
	for i, p := range priorities {
		names[i] = priorityName(p)
	}
	slices.Sort(names)
	slices.Sort(priorities)
	for i, p := range priorities {
		if names[i] != priorityName(p) {
			t.Fatalf("names sort differently from priorities at %d: %s for %d", i, names[i], p)
		}
	}
}

// TestDueTimes checks Curator's due-time encoding and how names are read
// back, malformed ones included.
func TestDueTimes(t *testing.T) {
	at := time.UnixMilli(0x18C5A1B2C3D)
	if got, want := delayName(at), "|18C5A1B2C3D|"; got != want {
		t.Errorf("delayName = %q, want %q", got, want)
	}
	if got, want := delayName(time.UnixMilli(0x1F)), "|0000001F|"; got != want {
		t.Errorf("delayName = %q, want %q", got, want)
	}
	for name, want := range map[string]int64{
		"queue-|18C5A1B2C3D|0000000042": 0x18C5A1B2C3D,
		"queue-0000000042":              0,
		"queue-||0000000042":            0,
		"queue-|zz|0000000042":          0,
		"|18C5A1B2C3D|":                 0, // Curator wants the first separator past index 0
	} {
		if got := dueOf(name); got != want {
			t.Errorf("dueOf(%q) = %d, want %d", name, got, want)
		}
	}
	for name, want := range map[string]string{
		"queue-0000000042":              "",
		"queue-1000000050000000042":     "100000005",
		"queue-|18C5A1B2C3D|0000000042": "|18C5A1B2C3D|",
	} {
		if got := middleOf(name); got != want {
			t.Errorf("middleOf(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestVisible checks which items of a delay queue are due, in which order,
// and when the next one is.
func TestVisible(t *testing.T) {
	q := &base{order: byDueTime}
	now := time.UnixMilli(1_000_000)
	name := func(dueMs int64, seq string) string {
		return itemName + delayName(time.UnixMilli(dueMs)) + strings.Repeat("0", sequenceLen-len(seq)) + seq
	}
	children := []string{
		name(1_000_500, "1"),
		name(999_000, "2"),
		"lock-0000000003", // not an item
		name(1_000_000, "4"),
		name(999_000, "0"),
		name(1_000_200, "5"),
	}
	got, due := q.visible(children, now)
	want := []string{name(999_000, "0"), name(999_000, "2"), name(1_000_000, "4")}
	if !slices.Equal(got, want) {
		t.Errorf("visible %v, want %v", got, want)
	}
	if !due.Equal(time.UnixMilli(1_000_200)) {
		t.Errorf("next due %v, want %v", due, time.UnixMilli(1_000_200))
	}
}
