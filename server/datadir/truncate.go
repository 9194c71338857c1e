package datadir

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/collie-io/collie/server/storage"
)

// TruncateResult says what Truncate did.
type TruncateResult struct {
	// Backup is where the WAL directory was copied, BackupFiles and
	// BackupBytes how much; the copy was read back and compared.
	Backup      string
	BackupFiles int
	BackupBytes int64
	// Segment and Offset are where the log was cut; Removed are the later
	// segments removed whole.
	Segment string
	Offset  int64
	Removed []string
	// Entries is the number of entries removed that could be read, from
	// FirstIndex to LastIndex, and States the hard states; what followed
	// the damage in its segment could not be read at all.
	Entries               int
	FirstIndex, LastIndex uint64
	States                int
	// Snapshot is the index of the snapshot a server starts from, and
	// LastIndex the last index of its log, after the cut.
	Snapshot     uint64
	LastIndexNow uint64
}

// Truncate cuts the WAL at offset of the segment named segment: the record
// there, the rest of that segment and every later segment go. It is the
// way back for a standalone server whose log is damaged and that has no
// backup: what the cut removes is lost, acknowledged writes included. In
// an ensemble a member must be rebuilt from the others instead (Rebuild):
// cutting acknowledged entries from a voter is the same as losing them,
// and with them the guarantee that a majority holds every acknowledged
// write.
//
// It refuses unless the segment is the one holding the first damage
// Verify reports and offset is a record boundary at or before it; and it
// refuses a cut that would remove the WAL's record of the snapshot a
// server now starts from. Before cutting, it copies the WAL directory to
// backup, which must be new or empty, and compares the copy with the
// original byte for byte.
func (d *Dir) Truncate(segment string, offset int64, backup string) (*TruncateResult, error) {
	if backup == "" {
		return nil, errors.New("datadir: truncate needs a backup directory: the cut cannot be undone without one")
	}
	segment = filepath.Base(segment)
	scan, err := storage.ScanWAL(d.WALDir, nil)
	if err != nil {
		return nil, err
	}
	damaged := scan.Damaged()
	if len(damaged) == 0 {
		return nil, errors.New("datadir: the log has no damage to cut (a torn write at its end is dropped by the server itself when it starts)")
	}
	first := damaged[0]
	if segment != first.Segment {
		return nil, fmt.Errorf("datadir: the first damage is in segment %s, at offset %d: cut there, not in %s", first.Segment, first.Offset, segment)
	}
	if offset > first.Offset {
		return nil, fmt.Errorf("datadir: offset %d is past the first damage in %s, at offset %d: cut at or before it", offset, segment, first.Offset)
	}
	if len(scan.Segments) == 0 {
		return nil, fmt.Errorf("datadir: %s has no segments", d.WALDir)
	}
	oldest := scan.Segments[0].Index

	before := func(r storage.WALRecord, seg string, off int64) bool {
		return r.Segment < seg || r.Segment == seg && r.Offset < off
	}
	res := &TruncateResult{Backup: backup, Segment: segment, Offset: offset}
	var (
		// What a start may use now (the records before the damage) and
		// after the cut.
		marksNow, marksCut   []storage.WALSnapshot
		commitNow, commitCut uint64
		markAt               = map[storage.WALSnapshot]string{}
		// starts are where the records of the segment cut begin.
		starts []int64
	)
	_, err = storage.ScanWAL(d.WALDir, func(r storage.WALRecord) error {
		if r.Segment == segment {
			starts = append(starts, r.Offset)
		}
		now, cut := before(r, first.Segment, first.Offset), before(r, segment, offset)
		switch {
		case r.Snapshot != nil:
			markAt[*r.Snapshot] = fmt.Sprintf("%s:%d", r.Segment, r.Offset)
			if now {
				marksNow = append(marksNow, *r.Snapshot)
			}
			if cut {
				marksCut = append(marksCut, *r.Snapshot)
			}
		case r.State != nil:
			if now {
				commitNow = r.State.Commit
			}
			if cut {
				commitCut = r.State.Commit
			}
		}
		if cut {
			return nil
		}
		switch {
		case r.Entry != nil:
			res.Entries++
			if res.FirstIndex == 0 {
				res.FirstIndex = r.Entry.Index
			}
			res.LastIndex = r.Entry.Index
		case r.State != nil:
			res.States++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	starts = append(starts, first.Offset)
	if len(starts) < 3 || offset <= starts[1] {
		return nil, fmt.Errorf("datadir: offset %d is within the records %s starts with: a segment cannot be cut there", offset, segment)
	}
	if !slices.Contains(starts, offset) {
		return nil, fmt.Errorf("datadir: no record of %s begins at offset %d: give an offset collie datadir verify or dump reports", segment, offset)
	}
	files, err := storage.ListSnapshots(d.SnapDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	usable := func(marks []storage.WALSnapshot, commit uint64) (storage.WALSnapshot, error) {
		var valid []storage.WALSnapshot
		for _, m := range marks {
			if m.Index <= commit && m.Index >= oldest {
				valid = append(valid, m)
			}
		}
		snap, err := storage.NewestUsableSnapshot(files, valid)
		switch {
		case errors.Is(err, storage.ErrNoSnapshot):
			return storage.WALSnapshot{}, nil
		case err != nil:
			return storage.WALSnapshot{}, err
		}
		return storage.WALSnapshot{Index: snap.Metadata.Index, Term: snap.Metadata.Term}, nil
	}
	now, err := usable(marksNow, commitNow)
	if err != nil {
		return nil, err
	}
	after, err := usable(marksCut, commitCut)
	if err != nil {
		return nil, err
	}
	if after != now {
		return nil, fmt.Errorf("datadir: the cut would remove what makes snapshot %d (recorded at %s) the one a server starts from, and the server could not replay its log from there: cut after that record",
			now.Index, markAt[now])
	}

	if res.BackupFiles, res.BackupBytes, err = backupWAL(d.WALDir, backup); err != nil {
		return nil, err
	}
	if res.Removed, err = storage.CutWAL(d.WALDir, segment, offset); err != nil {
		return res, fmt.Errorf("datadir: %w (the WAL as it was is in %s)", err, backup)
	}
	st, err := d.Load(false)
	if err != nil {
		return res, fmt.Errorf("datadir: the log does not read after the cut: %w (the WAL as it was is in %s)", err, backup)
	}
	res.Snapshot, res.LastIndexNow = st.snapMark().Index, st.LastIndex()
	return res, nil
}

// WriteText writes what Truncate did for a reader.
func (r *TruncateResult) WriteText(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "backed up %d files, %d bytes, to %s (compared byte for byte)\n", r.BackupFiles, r.BackupBytes, r.Backup)
	fmt.Fprintf(&b, "cut %s at offset %d", r.Segment, r.Offset)
	if len(r.Removed) > 0 {
		fmt.Fprintf(&b, ", and removed the later segments %v", r.Removed)
	}
	b.WriteString("\n")
	if r.Entries > 0 {
		fmt.Fprintf(&b, "removed %d entries that could be read, indexes %d..%d, and %d hard states\n", r.Entries, r.FirstIndex, r.LastIndex, r.States)
	} else {
		fmt.Fprintf(&b, "removed no entry that could be read, and %d hard states\n", r.States)
	}
	b.WriteString("and what followed the damage in its segment, which could not be read\n")
	fmt.Fprintf(&b, "a server now starts from snapshot %d and replays its log to index %d\n", r.Snapshot, r.LastIndexNow)
	_, err := w.Write(b.Bytes())
	return err
}

// backupWAL copies every file of the WAL directory src into dst, which
// must be new or empty, makes the copies durable, and reads both back to
// compare them byte for byte.
func backupWAL(src, dst string) (files int, size int64, err error) {
	switch ents, err := os.ReadDir(dst); {
	case err == nil && len(ents) > 0:
		return 0, 0, fmt.Errorf("datadir: the backup directory %s is not empty: give a new or empty one", dst)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return 0, 0, fmt.Errorf("datadir: backup: %w", err)
	}
	if err := os.MkdirAll(dst, 0o750); err != nil {
		return 0, 0, fmt.Errorf("datadir: backup: %w", err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return 0, 0, fmt.Errorf("datadir: backup: %w", err)
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	for _, name := range names {
		n, err := copyFile(filepath.Join(src, name), filepath.Join(dst, name))
		if err != nil {
			return 0, 0, fmt.Errorf("datadir: backup %s: %w", name, err)
		}
		size += n
	}
	if err := syncDir(dst); err != nil {
		return 0, 0, fmt.Errorf("datadir: backup: %w", err)
	}
	for _, name := range names {
		if err := sameFiles(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			return 0, 0, fmt.Errorf("datadir: the backup does not match the original: %w; nothing was cut", err)
		}
	}
	return len(names), size, nil
}

func copyFile(from, to string) (int64, error) {
	in, err := os.Open(from)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// sameFiles compares two files byte for byte.
func sameFiles(a, b string) error {
	fa, err := os.Open(a)
	if err != nil {
		return err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return err
	}
	defer fb.Close()
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	for off := int64(0); ; {
		na, erra := io.ReadFull(fa, ba)
		nb, errb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return fmt.Errorf("%s and %s differ after offset %d", a, b, off)
		}
		off += int64(na)
		done := func(err error) bool { return err == io.EOF || err == io.ErrUnexpectedEOF }
		switch {
		case done(erra) && done(errb):
			return nil
		case erra != nil && !done(erra):
			return erra
		case errb != nil && !done(errb):
			return errb
		case erra != nil || errb != nil:
			return fmt.Errorf("%s and %s differ in length", a, b)
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
