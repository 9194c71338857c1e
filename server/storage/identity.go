package storage

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// IdentityFile is the name of the file, in the snapshot directory, that
// says who wrote the data directory.
const IdentityFile = "identity"

// ErrIdentity marks a refusal to open a data directory whose files do not
// belong together or do not belong to this server. Nothing was changed.
var ErrIdentity = errors.New("storage: refusing the data directory")

// Identity says who wrote a data directory. The snapshot directory keeps
// it in its identity file; the WAL keeps it as its metadata, at the head
// of every segment. The token, random and made when the directory was
// created, ties a log to its snapshots: a log and a snapshot directory
// with different tokens were never one server's state.
type Identity struct {
	// Server is the id of the server that wrote the directory.
	Server uint64 `json:"server"`
	// Replicated is true for a member of an ensemble, false for a
	// standalone server: their logs do not mix.
	Replicated bool `json:"replicated"`
	// Token is hex, 32 digits; empty for a directory written before
	// identities were recorded, whose log has no metadata.
	Token string `json:"token"`
	// Log is where the WAL directory was when the identity file was last
	// written, so a refusal can say where to look. Only the snapshot
	// directory's copy has it.
	Log string `json:"log,omitempty"`
}

func (id Identity) mode() string {
	if id.Replicated {
		return "a member of an ensemble"
	}
	return "a standalone server"
}

// walMetadata is the identity as the WAL records it: without the log's
// location, which changes when an operator moves the directory.
func (id Identity) walMetadata() []byte {
	id.Log = ""
	b, _ := json.Marshal(id)
	return b
}

func parseIdentity(b []byte, what string) (Identity, error) {
	var id Identity
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&id); err != nil {
		return Identity{}, fmt.Errorf("%w: %s does not hold an identity (%w)", ErrCorrupt, what, err)
	}
	if id.Token != "" {
		if t, err := hex.DecodeString(id.Token); err != nil || len(t) != 16 {
			return Identity{}, fmt.Errorf("%w: %s has a malformed token %q", ErrCorrupt, what, id.Token)
		}
	}
	return id, nil
}

// readIdentityFile returns the identity file of snapDir, or ok false when
// there is none.
func readIdentityFile(snapDir string) (id Identity, ok bool, err error) {
	path := filepath.Join(snapDir, IdentityFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Identity{}, false, nil
	case err != nil:
		return Identity{}, false, fmt.Errorf("storage: read %s: %w", path, err)
	}
	id, err = parseIdentity(b, path)
	return id, err == nil, err
}

// writeIdentityFile replaces the identity file of snapDir whole: written
// aside, synced, renamed into place and the directory synced.
func writeIdentityFile(snapDir string, id Identity) error {
	if err := os.MkdirAll(snapDir, 0o750); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	b, _ := json.MarshalIndent(id, "", "  ")
	b = append(b, '\n')
	path := filepath.Join(snapDir, IdentityFile)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("storage: write identity: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(snapDir)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("storage: write identity %s: %w", path, err)
	}
	return nil
}

// newToken returns a fresh random token.
func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hasSnapshots reports whether snapDir holds snapshot files, damaged ones
// included.
func hasSnapshots(snapDir string) (bool, error) {
	ents, err := os.ReadDir(snapDir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("storage: %w", err)
	}
	for _, e := range ents {
		n := e.Name()
		if strings.HasSuffix(n, snapSuffix) || strings.HasSuffix(n, snapSuffix+brokenSuffix) {
			return true, nil
		}
	}
	return false, nil
}

// errUsed stops walUsed at the first record it looks for.
var errUsed = errors.New("used")

// walUsed reports whether the WAL in dir holds anything beyond what
// Create wrote (an entry or a hard state). It reads only until it finds
// one.
func walUsed(dir string) (bool, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return false, fmt.Errorf("storage: %w", err)
	}
	segs = segs[contiguousFrom(segs):]
	_, err = replay(dir, segs, false, func(t recordType, _ []byte) error {
		if t == entryType || t == stateType {
			return errUsed
		}
		return nil
	})
	switch {
	case errors.Is(err, errUsed):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("storage: read the WAL in %s: %w", dir, err)
	}
	return false, nil
}

// checkIdentity makes sure the WAL in walDir and the snapshots in snapDir
// are one server's state, and that server is want (its Server and
// Replicated; the token is made here). It creates the WAL when neither
// exists, records the identity of a directory written before identities
// were, and refuses, with ErrIdentity and what to do, every other mix.
func checkIdentity(walDir, snapDir string, want Identity, create func(metadata []byte) error) (Identity, error) {
	walAbs, err := filepath.Abs(walDir)
	if err != nil {
		return Identity{}, fmt.Errorf("storage: %w", err)
	}
	snapAbs, err := filepath.Abs(snapDir)
	if err != nil {
		return Identity{}, fmt.Errorf("storage: %w", err)
	}
	file, haveFile, err := readIdentityFile(snapDir)
	if err != nil {
		return Identity{}, err
	}
	snaps, err := hasSnapshots(snapDir)
	if err != nil {
		return Identity{}, err
	}
	if !Exist(walDir) {
		switch {
		case haveFile && file.Log != "" && file.Log != walAbs && Exist(file.Log):
			return Identity{}, fmt.Errorf("%w: there is no log in %s, but %s holds the snapshots of server %d, whose log is in %s: set dataLogDir=%s, or move %s to %s",
				ErrIdentity, walAbs, snapAbs, file.Server, file.Log, filepath.Dir(file.Log), file.Log, walAbs)
		case haveFile:
			return Identity{}, fmt.Errorf("%w: there is no log in %s, but %s holds the snapshots of server %d, whose log was in %s and is gone: if it was moved, set dataLogDir to the directory that holds it; if it is lost, restore this server's data from a backup, or in an ensemble rebuild it from the other members; never start it empty",
				ErrIdentity, walAbs, snapAbs, file.Server, orNone(file.Log))
		case snaps:
			return Identity{}, fmt.Errorf("%w: there is no log in %s, but %s holds snapshots: set dataLogDir to the directory that holds this server's wal directory; if the log is lost, restore this server's data from a backup, or in an ensemble rebuild it from the other members; never start it empty",
				ErrIdentity, walAbs, snapAbs)
		}
		want.Token = newToken()
		if err := create(want.walMetadata()); err != nil {
			return Identity{}, err
		}
		want.Log = walAbs
		return want, writeIdentityFile(snapDir, want)
	}

	// The head of the log says who wrote it; the rest is read by the
	// start, after this.
	logID, legacy, err := ReadWALIdentity(walDir)
	if err != nil {
		return Identity{}, err
	}
	if !haveFile {
		used := false
		if !legacy && !snaps {
			if used, err = walUsed(walDir); err != nil {
				return Identity{}, err
			}
		}
		switch {
		case legacy:
			// Written before identities were recorded: take the
			// configuration's word once, and hold it to it from now on.
			logID = Identity{Server: want.Server, Replicated: want.Replicated}
		case snaps || used:
			return Identity{}, fmt.Errorf("%w: the log in %s belongs to server %d (%s), but %s has no identity file: dataDir must be the directory that holds this log's snapshots; if they are lost, restore this server's data from a backup, or in an ensemble rebuild it from the other members",
				ErrIdentity, walAbs, logID.Server, logID.mode(), snapAbs)
		}
		// Otherwise a crash came between creating the log and recording
		// the identity beside the snapshots: nothing was written yet.
		if err := checkWanted(logID, want, "the log in "+walAbs); err != nil {
			return Identity{}, err
		}
		logID.Log = walAbs
		return logID, writeIdentityFile(snapDir, logID)
	}
	if file.Token != logID.Token && !(legacy && file.Token == "") {
		return Identity{}, fmt.Errorf("%w: the log in %s and the snapshots in %s are from different data directories (tokens %s and %s): point dataDir and dataLogDir at the two halves of one server's data",
			ErrIdentity, walAbs, snapAbs, orNone(logID.Token), orNone(file.Token))
	}
	if err := checkWanted(file, want, "the data in "+snapAbs); err != nil {
		return Identity{}, err
	}
	if file.Log != walAbs {
		file.Log = walAbs
		if err := writeIdentityFile(snapDir, file); err != nil {
			return Identity{}, err
		}
	}
	return file, nil
}

// checkWanted refuses a directory written by another server id or in the
// other mode.
func checkWanted(got, want Identity, what string) error {
	if got.Server != want.Server {
		return fmt.Errorf("%w: %s was written by server %d, and this is server %d (the myid file): point dataDir and dataLogDir at this server's own data",
			ErrIdentity, what, got.Server, want.Server)
	}
	if got.Replicated != want.Replicated {
		return fmt.Errorf("%w: %s was written by %s, and the configuration makes this server %s: a log of one kind cannot be continued as the other; restore the configuration it was written with",
			ErrIdentity, what, got.mode(), want.mode())
	}
	return nil
}

func orNone(token string) string {
	if token == "" {
		return "none"
	}
	return token
}
