package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"go.etcd.io/raft/v3/raftpb"
)

// ErrNoSpace matches the errors of appends and snapshot writes that ran
// out of space on the disk before any of their bytes reached the log or a
// snapshot file in place: the files are as they were, and the same call
// may be made again once space is freed. Every such error is a
// *NoSpaceError. A failure for want of space anywhere else (part way
// through writing records, or reported by an fsync) is not one of them:
// it fails the WAL for good, as any failed write does.
var ErrNoSpace = errors.New("storage: no space left on the device")

// NoSpaceError is an ErrNoSpace: what could not be done, where, and what
// the file system said.
type NoSpaceError struct {
	Op   string // "make the next WAL segment", "extend a WAL segment", "write a snapshot"
	Path string // the directory or file
	Err  error
}

func (e *NoSpaceError) Error() string {
	return fmt.Sprintf("storage: no space left on the device to %s in %s: %v", e.Op, e.Path, e.Err)
}

func (e *NoSpaceError) Unwrap() error { return e.Err }

// Is makes a NoSpaceError match ErrNoSpace.
func (e *NoSpaceError) Is(target error) bool { return target == ErrNoSpace }

// NoSpace reports true. Callers that do not import this package (the
// replication node, which only sees its Storage interface) tell a write
// they may retry by this method.
func (e *NoSpaceError) NoSpace() bool { return true }

// allocate gives a file blocks up to size bytes (preallocate). Tests
// replace it to run out of space.
var allocate = preallocate

// outOfSpace reports whether err says the file system is full, or the
// user's quota is.
func outOfSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// spoilsNothing reports whether err is a lack of space met while making a
// file that is not in place yet (a .tmp name: a segment or spare being
// prepared, a snapshot being written), by opening, writing, allocating or
// renaming it: the file is removed, and nothing that was in place before
// changed. A lack of space met on a file in place, or reported by an
// fsync (which may mean the kernel dropped written pages) or a close, is
// not.
func spoilsNothing(err error) bool {
	if !outOfSpace(err) {
		return false
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		// A rename is all or nothing.
		return le.Op == "rename" && strings.HasSuffix(le.Old, tmpSuffix)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		switch pe.Op {
		case "open", "write", "fallocate":
			return strings.HasSuffix(pe.Path, tmpSuffix)
		}
	}
	return false
}

// snapshotNoSpace turns the error of a snapshot write that ran out of
// space into a *NoSpaceError: Snapshotter.Write removes its unfinished
// file, so nothing was spoilt.
func snapshotNoSpace(dir string, err error) error {
	if err != nil && spoilsNothing(err) {
		return &NoSpaceError{Op: "write a snapshot", Path: dir, Err: err}
	}
	return err
}

// makeRoom prepares the tail segment for an append of need bytes, so that
// the append cannot run out of space part way: it first makes the next
// segment when a cut found no space for it (tailCut), then allocates the
// blocks the append will write past the segment's preallocated size (the
// Save that crosses it). It fails with a *NoSpaceError, leaving the log as
// it was, when the disk is full. File systems without fallocate allocate
// as the records are written, and offer no such guarantee.
func (w *WAL) makeRoom(need int64) error {
	if w.tailCut {
		if err := w.tryCut(); err != nil {
			return err
		}
	}
	end := (w.enc.offset() + need + pageBytes - 1) &^ (pageBytes - 1)
	if end <= w.segmentBytes {
		return nil
	}
	if err := allocate(w.enc.f, end); err != nil {
		if outOfSpace(err) {
			// fallocate changes no byte of the file.
			return &NoSpaceError{Op: "extend a WAL segment", Path: filepath.Join(w.dir, w.tail.name()), Err: err}
		}
		return w.fail(err)
	}
	return nil
}

// tryCut cuts the tail segment, and tells a cut that found no space for
// the next segment from a failure: the WAL then keeps the full segment as
// its tail, and the next append tries again first (makeRoom). A cut
// truncates and fsyncs the full segment before it makes the next one, so
// the records appended so far are durable either way.
func (w *WAL) tryCut() error {
	if w.tailCut {
		// The cut truncated the tail to its records; writing its last
		// page again must not need a block the disk no longer has.
		if err := allocate(w.enc.f, (w.enc.offset()+pageBytes-1)&^(pageBytes-1)); err != nil {
			if outOfSpace(err) {
				return &NoSpaceError{Op: "make the next WAL segment", Path: w.dir, Err: err}
			}
			return w.fail(err)
		}
	}
	err := w.cut()
	switch {
	case err == nil:
		if w.tailCut {
			w.tailCut = false
			w.lg.Info("storage: space for WAL segments again", "dir", w.dir, "segment", w.tail.name())
		}
		return nil
	case spoilsNothing(err):
		if !w.tailCut {
			w.lg.Warn("storage: no space left on the device for the next WAL segment; appends wait for space", "dir", w.dir, "err", err)
		}
		w.tailCut = true
		if w.spare != nil && w.spare.failed() != nil {
			// Prepared again after the next cut, not left failed until the
			// one after it.
			w.spare = nil
		}
		return &NoSpaceError{Op: "make the next WAL segment", Path: w.dir, Err: err}
	default:
		return w.fail(err)
	}
}

// cutAfterSave cuts the tail segment after a Save that filled it. A cut
// that finds no space for the next segment does not fail the Save: its
// records are durable.
func (w *WAL) cutAfterSave() error {
	if err := w.tryCut(); !errors.Is(err, ErrNoSpace) {
		return err
	}
	return nil
}

// spareRoom reports whether the file system holding dir has room for a
// spare segment of size bytes and as much again: a spare written into the
// last free space would take it from the cut it is for, which then finds
// no room although the disk is not full, and from snapshots. Where free
// space cannot be known, it reports true.
func spareRoom(dir string, size int64) bool {
	free, ok := freeBytes(dir)
	return !ok || free >= 2*size
}

// recordBytes returns how many bytes the records of a Save take in a
// segment, at most.
func recordBytes(st *raftpb.HardState, ents []raftpb.Entry) int64 {
	// A crc record may head the append.
	total := frameBytes(4) + frameBytes(st.Size())
	for i := range ents {
		total += frameBytes(ents[i].Size())
	}
	return total
}

// frameBytes returns the size of a record of n data bytes in a segment.
func frameBytes(n int) int64 {
	body := bodyHeader + n
	return int64(lenBytes + body + padding(body))
}
