package zkdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/golang/snappy"
)

// snappy-java's stream format, which ZooKeeper's snappy snapshots use: a
// header (a magic, then its version and the oldest version it is
// compatible with), then blocks, each a big-endian length and a raw
// snappy block. Streams may be concatenated, header and all.
var snappyMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	snappyHeaderLen = 16
	// maxSnappyBlock bounds a block, compressed or not; snappy-java
	// writes blocks of 32 KiB by default.
	maxSnappyBlock = 64 << 20
)

type snappyReader struct {
	r       io.Reader
	started bool
	buf     []byte // decoded bytes not yet read
	block   []byte
	err     error
}

func newSnappyReader(r io.Reader) *snappyReader { return &snappyReader{r: r} }

func (s *snappyReader) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		s.err = s.next()
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// next decodes the next block into buf.
func (s *snappyReader) next() error {
	var head [snappyHeaderLen]byte
	if !s.started {
		if _, err := io.ReadFull(s.r, head[:]); err != nil {
			return fmt.Errorf("snappy stream header: %w", unexpected(err))
		}
		if !bytes.Equal(head[:8], snappyMagic) {
			return errors.New("not a snappy stream (no snappy-java header)")
		}
		s.started = true
	}
	var size [4]byte
	if _, err := io.ReadFull(s.r, size[:]); err != nil {
		if err == io.EOF {
			return io.EOF
		}
		return fmt.Errorf("snappy block length: %w", unexpected(err))
	}
	if size[0] == snappyMagic[0] {
		// Possibly the header of a concatenated stream.
		copy(head[:4], size[:])
		if _, err := io.ReadFull(s.r, head[4:]); err != nil {
			return fmt.Errorf("snappy block: %w", unexpected(err))
		}
		if !bytes.Equal(head[:8], snappyMagic) {
			return fmt.Errorf("snappy block of %d bytes", binary.BigEndian.Uint32(size[:]))
		}
		return nil
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > maxSnappyBlock {
		return fmt.Errorf("snappy block of %d bytes", n)
	}
	if cap(s.block) < int(n) {
		s.block = make([]byte, n)
	}
	s.block = s.block[:n]
	if _, err := io.ReadFull(s.r, s.block); err != nil {
		return fmt.Errorf("snappy block: %w", unexpected(err))
	}
	dlen, err := snappy.DecodedLen(s.block)
	if err != nil || dlen > maxSnappyBlock {
		return fmt.Errorf("snappy block: bad length (%v)", err)
	}
	s.buf, err = snappy.Decode(make([]byte, dlen), s.block)
	if err != nil {
		return fmt.Errorf("snappy block: %w", err)
	}
	return nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
