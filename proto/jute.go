package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrMalformed is returned when bytes from the network do not decode as the
// expected record: a truncated field, or a length that does not fit in what is
// left of the frame. The connection that sent them must be closed.
var ErrMalformed = errors.New("proto: malformed record")

// Record is a jute record: encodable and decodable in schema order.
type Record interface {
	Encode(e *Encoder)
	Decode(d *Decoder)
}

// Encoder appends jute-encoded values to a buffer.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an Encoder that appends to buf.
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf} }

// Bytes returns the encoded bytes.
func (e *Encoder) Bytes() []byte { return e.buf }

func (e *Encoder) Int(v int32)  { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }
func (e *Encoder) Long(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

func (e *Encoder) Bool(v bool) {
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// Buffer writes b, and nil as jute's null (-1).
func (e *Encoder) Buffer(b []byte) {
	if b == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(b)))
	e.buf = append(e.buf, b...)
}

func (e *Encoder) String(s string) {
	e.Int(int32(len(s)))
	e.buf = append(e.buf, s...)
}

// Strings writes a vector of strings; nil is written as null.
func (e *Encoder) Strings(v []string) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	for _, s := range v {
		e.String(s)
	}
}

func (e *Encoder) Record(r Record) { r.Encode(e) }

// Decoder reads jute-encoded values from one frame. The first failure sticks:
// every later read returns a zero value, and Err reports it, so a record's
// Decode can read all its fields and let the caller check once.
type Decoder struct {
	buf []byte
	off int
	err error
}

// NewDecoder returns a Decoder over b. The decoded byte slices and strings do
// not alias b.
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// Err returns the first decoding failure, wrapping ErrMalformed.
func (d *Decoder) Err() error { return d.err }

// Remaining returns the number of unread bytes.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

// Fail records a failure of the record being decoded.
func (d *Decoder) Fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

func (d *Decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf)-d.off {
		d.Fail("%s needs %d bytes, %d left", what, n, len(d.buf)-d.off)
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

func (d *Decoder) Int() int32 {
	b := d.take(4, "int")
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (d *Decoder) Long() int64 {
	b := d.take(8, "long")
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func (d *Decoder) Bool() bool {
	b := d.take(1, "boolean")
	return b != nil && b[0] != 0
}

// Buffer reads a buffer; null decodes as nil, empty as a non-nil empty slice.
func (d *Decoder) Buffer() []byte {
	n := d.Int()
	if d.err != nil || n == -1 {
		return nil
	}
	b := d.take(int(n), "buffer")
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// BufferView reads a buffer like Buffer, but without copying it: the result
// shares the decoder's input, so it is only for input that is never
// changed and for callers that are done with the result when they are done
// with the input.
func (d *Decoder) BufferView() []byte {
	n := d.Int()
	if d.err != nil || n == -1 {
		return nil
	}
	b := d.take(int(n), "buffer")
	if b == nil {
		return nil
	}
	return b[:len(b):len(b)]
}

// String reads a string; null decodes as "".
func (d *Decoder) String() string {
	n := d.Int()
	if d.err != nil || n == -1 {
		return ""
	}
	return string(d.take(int(n), "string"))
}

// count reads a vector length and checks that count elements of at least
// minSize bytes each can fit in what is left, so a hostile count allocates
// nothing. It returns -1 for a null vector.
func (d *Decoder) count(minSize int) int {
	n := d.Int()
	if d.err != nil {
		return 0
	}
	if n == -1 {
		return -1
	}
	if n < 0 || int(n) > d.Remaining()/minSize {
		d.Fail("vector of %d elements in %d bytes", n, d.Remaining())
		return 0
	}
	return int(n)
}

// Strings reads a vector of strings; null decodes as nil.
func (d *Decoder) Strings() []string {
	n := d.count(4)
	if n < 0 || d.err != nil {
		return nil
	}
	v := make([]string, n)
	for i := range v {
		v[i] = d.String()
	}
	if d.err != nil {
		return nil
	}
	return v
}

func (d *Decoder) Record(r Record) { r.Decode(d) }

// Marshal returns the jute encoding of r.
func Marshal(r Record) []byte {
	e := Encoder{}
	r.Encode(&e)
	return e.buf
}

// AppendMarshal appends the jute encoding of r to buf.
func AppendMarshal(buf []byte, r Record) []byte {
	e := Encoder{buf: buf}
	r.Encode(&e)
	return e.buf
}

// Unmarshal decodes b into r. Bytes after the record are ignored, as
// ZooKeeper ignores them.
func Unmarshal(b []byte, r Record) error {
	d := NewDecoder(b)
	r.Decode(d)
	return d.err
}
