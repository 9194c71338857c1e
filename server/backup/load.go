package backup

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/collie-io/collie/server/fsm"
)

// Loaded is a backup file read whole and verified.
type Loaded struct {
	Header Header
	// Sum is the SHA-256 the file's trailer holds, which identifies it.
	Sum [sha256.Size]byte
	// FileSize is the file's length in bytes.
	FileSize int64
	// State is the state machine the file holds.
	State *fsm.FSM
}

// Load reads the backup file at path, checks it whole and decodes its
// state. What is wrong with a damaged file comes first: an error wrapping
// ErrDamaged when the file is cut short or altered anywhere, whether or
// not the state decoded; then one wrapping fsm.ErrBadSnapshot when the
// file is whole but its state does not decode.
func Load(path string, opts fsm.Options) (*Loaded, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	br, err := NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	state, rerr := fsm.Restore(opts, br)
	// The rest of the file, read through its sum: damage that made the
	// state fail to decode is reported as damage.
	if _, err := io.Copy(io.Discard, br); err != nil {
		if errors.Is(err, ErrDamaged) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, fmt.Errorf("backup: read %s: %w", path, err)
	}
	if rerr != nil {
		return nil, fmt.Errorf("%s: the file is whole, but its state does not decode: %w", path, rerr)
	}
	h := br.Header()
	if got := state.Applied(); got > h.Index {
		return nil, fmt.Errorf("%s: the header says index %d, but the state is at %d", path, h.Index, got)
	}
	if got := state.EnsembleID(); got != h.Ensemble {
		return nil, fmt.Errorf("%s: the header says ensemble %016x, but the state is ensemble %016x's", path, h.Ensemble, got)
	}
	return &Loaded{Header: h, Sum: br.Sum(), FileSize: info.Size(), State: state}, nil
}
