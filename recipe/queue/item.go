package queue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Curator's ItemSerializer frames the values of one item node: a version
// word, then each value as an item opcode and a length-prefixed byte
// string, then an end opcode. Integers are big-endian.
const (
	frameVersion = 0x00010001
	opItem       = 0x01
	opEOF        = 0x02
)

// itemName starts the name of every item node, as Curator names them;
// children of the queue path named otherwise are not items.
const itemName = "queue-"

// sequenceLen is the length of the sequence number the server appends.
const sequenceLen = 10

// errFraming says that an item node's data is not in Curator's framing.
var errFraming = errors.New("not in Curator's item framing")

// encodeValues frames values as Curator's ItemSerializer does.
func encodeValues(values [][]byte) []byte {
	n := 4 + 1
	for _, v := range values {
		n += 1 + 4 + len(v)
	}
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint32(b, frameVersion)
	for _, v := range values {
		b = append(b, opItem)
		b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return append(b, opEOF)
}

// decodeValues reads values framed by encodeValues or by Curator. What
// follows the end opcode is ignored, as Curator ignores it.
func decodeValues(b []byte) ([][]byte, error) {
	if len(b) < 4 || binary.BigEndian.Uint32(b) != frameVersion {
		return nil, fmt.Errorf("%w: no version word", errFraming)
	}
	b = b[4:]
	values := [][]byte{}
	for {
		if len(b) == 0 {
			return nil, fmt.Errorf("%w: no end opcode", errFraming)
		}
		op := b[0]
		b = b[1:]
		switch {
		case op == opEOF:
			return values, nil
		case op != opItem:
			return nil, fmt.Errorf("%w: opcode %#x", errFraming, op)
		case len(b) < 4:
			return nil, fmt.Errorf("%w: truncated length", errFraming)
		}
		size := binary.BigEndian.Uint32(b)
		b = b[4:]
		if uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("%w: value of %d bytes, %d left", errFraming, size, len(b))
		}
		values = append(values, b[:size:size])
		b = b[size:]
	}
}

// priorityName is what follows "queue-" in the name of an item of a
// priority queue: as Curator's DistributedPriorityQueue writes it, "0" for
// a negative priority and "1" otherwise, then the 32 bits in 8 upper-case
// hex digits, so that names sort in the order of priorities.
func priorityName(priority int32) string {
	sign := "1"
	if priority < 0 {
		sign = "0"
	}
	return fmt.Sprintf("%s%08X", sign, uint32(priority))
}

// delaySeparator brackets the due time in the name of an item of a delay
// queue, as Curator's DistributedDelayQueue writes it.
const delaySeparator = "|"

// delayName is what follows "queue-" in the name of an item of a delay
// queue due at: its time in milliseconds since the Unix epoch, in at least
// 8 upper-case hex digits, between separators.
func delayName(at time.Time) string {
	return fmt.Sprintf("%s%08X%s", delaySeparator, at.UnixMilli(), delaySeparator)
}

// dueOf returns the due time, in milliseconds since the Unix epoch, that an
// item name carries between its last two separators; 0 (due at once) for a
// name without one, as Curator reads it.
func dueOf(name string) int64 {
	last := strings.LastIndex(name, delaySeparator)
	if last <= 0 {
		return 0
	}
	first := strings.LastIndex(name[:last], delaySeparator)
	if first <= 0 || last == first+1 {
		return 0
	}
	ms, err := strconv.ParseInt(name[first+1:last], 16, 64)
	if err != nil {
		return 0
	}
	return ms
}

// middleOf returns what an item name holds between "queue-" and its
// sequence number: a priority, a due time, or nothing.
func middleOf(name string) string {
	rest := strings.TrimPrefix(name, itemName)
	if len(rest) < sequenceLen {
		return ""
	}
	return rest[:len(rest)-sequenceLen]
}
