package datadir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/collie-io/collie/server/storage"
)

// Report is what Verify found.
type Report struct {
	Segments  int `json:"segments"`
	Records   int `json:"records"`
	Snapshots int `json:"snapshots"`
	// Problems are damage, or anything else that keeps a server from
	// starting on the directory or would lose data when it does; Notes are
	// findings a server copes with on its own (a torn tail, a snapshot it
	// set aside or ignores).
	Problems []Finding `json:"problems"`
	Notes    []Finding `json:"notes"`
}

// Finding is one problem or note, and where it is.
type Finding struct {
	File string `json:"file"`
	// Offset is where in the file; -1 for the file as a whole.
	Offset int64 `json:"offset"`
	// Torn is set for a torn write at the end of the log.
	Torn    bool   `json:"torn,omitempty"`
	Message string `json:"message"`
}

// Clean reports whether Verify found no problem.
func (r *Report) Clean() bool { return len(r.Problems) == 0 }

// Verify reads every WAL record and every snapshot file through their
// checksums, and checks that a server could start from what they hold. It
// changes nothing.
func (d *Dir) Verify() (*Report, error) {
	r := &Report{Problems: []Finding{}, Notes: []Finding{}}
	scan, err := storage.ScanWAL(d.WALDir, func(storage.WALRecord) error {
		r.Records++
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.Segments = len(scan.Segments)
	for _, name := range scan.Ignored {
		r.Notes = append(r.Notes, Finding{File: filepath.Join(d.WALDir, name), Offset: -1,
			Message: "behind a gap in the sequence of segments (a purge a crash interrupted): no server reads it, and it may be removed"})
	}
	for _, p := range scan.Problems {
		f := Finding{File: filepath.Join(d.WALDir, p.Segment), Offset: p.Offset, Torn: p.Torn, Message: p.Err.Error()}
		if p.Rest {
			f.Message += "; the rest of the segment cannot be read"
		}
		if p.Torn {
			r.Notes = append(r.Notes, f)
		} else {
			r.Problems = append(r.Problems, f)
		}
	}

	files, err := storage.ListSnapshots(d.SnapDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	r.Snapshots = len(files)
	// Which snapshots a start may use is known only from a readable log.
	var marks []storage.WALSnapshot
	walClean := len(scan.Damaged()) == 0
	if walClean {
		if marks, err = storage.ValidSnapshotEntries(d.WALDir); err != nil {
			r.Problems = append(r.Problems, Finding{File: d.WALDir, Offset: -1, Message: err.Error()})
			walClean = false
		}
	}
	for i := range files {
		f := &files[i]
		path := filepath.Join(d.SnapDir, f.Name)
		err := f.Check()
		switch {
		case f.Broken && err != nil:
			r.Notes = append(r.Notes, Finding{File: path, Offset: -1, Message: "set aside by a server as damaged (" + err.Error() + "); it started from an older snapshot"})
		case f.Broken:
			r.Notes = append(r.Notes, Finding{File: path, Offset: -1, Message: "set aside by a server as damaged, but passes its checks now"})
		case err != nil:
			r.Problems = append(r.Problems, Finding{File: path, Offset: -1, Message: err.Error()})
		case walClean && !contains(marks, f.Index, f.Term):
			r.Notes = append(r.Notes, Finding{File: path, Offset: -1, Message: "the WAL has no usable record of this snapshot (a crash before its record was written, or it is above the commit index): a server ignores it"})
		}
	}
	if walClean {
		// A start reads the log from the newest usable snapshot: this
		// catches a log that no snapshot left can be replayed from.
		snap, err := storage.NewestUsableSnapshot(files, marks)
		var at storage.WALSnapshot
		switch {
		case err == nil:
			at = storage.WALSnapshot{Index: snap.Metadata.Index, Term: snap.Metadata.Term}
		case !errors.Is(err, storage.ErrNoSnapshot):
			r.Problems = append(r.Problems, Finding{File: d.SnapDir, Offset: -1, Message: err.Error()})
		}
		if _, _, _, err := storage.ReadLog(d.WALDir, at); err != nil {
			r.Problems = append(r.Problems, Finding{File: d.WALDir, Offset: -1, Message: fmt.Sprintf("a server could not start from snapshot %d: %v", at.Index, err)})
		}
	}
	return r, nil
}

func contains(marks []storage.WALSnapshot, index, term uint64) bool {
	for _, m := range marks {
		if m.Index == index && m.Term == term {
			return true
		}
	}
	return false
}

// WriteText writes the report for a reader: each finding on a line that
// starts with the file and the offset.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	where := func(f Finding) string {
		if f.Offset < 0 {
			return f.File
		}
		return fmt.Sprintf("%s:%d", f.File, f.Offset)
	}
	for _, f := range r.Problems {
		fmt.Fprintf(&b, "%s: %s\n", where(f), f.Message)
	}
	for _, f := range r.Notes {
		kind := "note"
		if f.Torn {
			kind = "torn tail"
		}
		fmt.Fprintf(&b, "%s: %s: %s\n", where(f), kind, f.Message)
	}
	verdict := "clean"
	if !r.Clean() {
		verdict = fmt.Sprintf("%d problems", len(r.Problems))
		if len(r.Problems) == 1 {
			verdict = "1 problem"
		}
	}
	fmt.Fprintf(&b, "%s: %d WAL segments, %d records, %d snapshot files\n", verdict, r.Segments, r.Records, r.Snapshots)
	_, err := io.WriteString(w, b.String())
	return err
}
