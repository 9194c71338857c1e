// Package inspect owns what `collie dump` reads: it tells what kind of
// input a path is, by its content (a file's magic) or by being a
// directory, and writes what the input holds, the same way for every
// kind: a line that describes the input, then every znode (path, data,
// Stat, ACL), parents first, then the open sessions; as text, or as JSON
// lines. Each kind is an entry of Kinds: another format is read by adding
// its Kind.
package inspect

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/collie-io/collie/server/backup"
	"github.com/collie-io/collie/server/datadir"
	"github.com/collie-io/collie/server/fsm"
)

// Options say how to read and write.
type Options struct {
	// JSON writes JSON lines instead of text.
	JSON bool
	// FSM are the server's state machine options (extendedTypesEnabled).
	FSM fsm.Options
	// LogDir is the dataLogDir of a data directory whose log is kept
	// apart; "" when it is in the directory.
	LogDir string
}

// Kind is a kind of input.
type Kind struct {
	// Name says what the input is, in the describing line.
	Name string
	// Match reports whether the input at path is of this kind: dir says
	// whether it is a directory; head holds a file's first bytes (up to
	// HeadSize), nil for a directory.
	Match func(path string, dir bool, head []byte) bool
	// Dump writes what the input at path holds.
	Dump func(path string, w io.Writer, opts Options) error
}

// HeadSize is how many of a file's first bytes Match is given.
const HeadSize = 64

// Kinds are the inputs Dump reads, tried in order.
var Kinds = []Kind{
	{
		Name:  "collie data directory",
		Match: func(_ string, dir bool, _ []byte) bool { return dir },
		Dump:  dumpDataDir,
	},
	{
		Name: "collie backup",
		Match: func(_ string, dir bool, head []byte) bool {
			return !dir && len(head) >= len(backup.Magic) && string(head[:len(backup.Magic)]) == backup.Magic
		},
		Dump: dumpBackup,
	},
}

// ErrUnknownKind is returned by Dump for an input no Kind matches.
var ErrUnknownKind = errors.New("inspect: not an input collie dump reads")

// Dump writes what the input at path holds.
func Dump(path string, w io.Writer, opts Options) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	var head []byte
	if !info.IsDir() {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("inspect: %w", err)
		}
		head = make([]byte, HeadSize)
		n, err := io.ReadFull(f, head)
		f.Close()
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return fmt.Errorf("inspect: %w", err)
		}
		head = head[:n]
	}
	for _, k := range Kinds {
		if k.Match(path, info.IsDir(), head) {
			return k.Dump(path, w, opts)
		}
	}
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = k.Name
	}
	return fmt.Errorf("%w: %s is none of: %q", ErrUnknownKind, path, names)
}

// Description is the line that comes first: what the input is and the
// state it holds.
type Description struct {
	Kind     string     `json:"kind"`
	Path     string     `json:"path"`
	Zxid     string     `json:"zxid"`
	Index    uint64     `json:"index"`
	Ensemble string     `json:"ensemble"`
	Server   uint64     `json:"server,omitempty"`
	Taken    *time.Time `json:"taken,omitempty"`
	Nodes    int        `json:"nodes"`
	Sessions int        `json:"sessions"`
}

func (d Description) text() string {
	s := fmt.Sprintf("# %s %s: zxid %s (index %d), ensemble %s, %d znodes, %d sessions", d.Kind, d.Path, d.Zxid, d.Index, d.Ensemble, d.Nodes, d.Sessions)
	if d.Server != 0 {
		s += fmt.Sprintf(", from server %d", d.Server)
	}
	if d.Taken != nil {
		s += ", taken " + d.Taken.Format(time.RFC3339Nano)
	}
	return s
}

// writeState writes the description, then f's znodes and sessions.
func writeState(w io.Writer, d Description, f *fsm.FSM, opts Options) error {
	d.Nodes, d.Sessions = f.Tree().Len(), len(f.Sessions())
	d.Zxid = "0x" + strconv.FormatUint(uint64(f.LastZxid()), 16)
	var err error
	if opts.JSON {
		var b []byte
		b, err = json.Marshal(d)
		if err == nil {
			_, err = w.Write(append(b, '\n'))
		}
	} else {
		_, err = io.WriteString(w, d.text()+"\n")
	}
	if err != nil {
		return err
	}
	if err := datadir.WriteTree(w, f, opts.JSON); err != nil {
		return err
	}
	return datadir.WriteSessions(w, f, opts.JSON)
}

// EnsembleString writes an ensemble id as Collie's tools do.
func EnsembleString(id uint64) string { return fmt.Sprintf("%016x", id) }

func dumpDataDir(path string, w io.Writer, opts Options) error {
	d, err := datadir.Open(path, opts.LogDir, opts.FSM)
	if err != nil {
		return err
	}
	defer d.Close()
	st, err := d.Load(true)
	if err != nil {
		return err
	}
	desc := Description{Kind: "collie data directory", Path: path, Index: st.Applied, Ensemble: EnsembleString(st.FSM.EnsembleID())}
	return writeState(w, desc, st.FSM, opts)
}

func dumpBackup(path string, w io.Writer, opts Options) error {
	l, err := backup.Load(path, opts.FSM)
	if err != nil {
		return err
	}
	h := l.Header
	desc := Description{Kind: "collie backup", Path: path, Index: h.Index, Ensemble: EnsembleString(h.Ensemble), Server: h.Server, Taken: &h.Taken}
	return writeState(w, desc, l.State, opts)
}
