package backup_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collie-io/collie/server/backup"
)

func sampleHeader(size int) backup.Header {
	return backup.Header{Index: 0x500000007, Term: 3, Zxid: 0x500000007, Ensemble: 0x29f9f1e80354566b, Server: 2,
		Taken: time.Date(2026, 11, 27, 9, 30, 0, 123456789, time.UTC), Size: int64(size)}
}

func encode(t *testing.T, h backup.Header, data []byte) []byte {
	t.Helper()
	b, err := io.ReadAll(backup.Encode(h, bytes.NewReader(data)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	data := bytes.Repeat([]byte("collie state "), 10000)
	h := sampleHeader(len(data))
	file := encode(t, h, data)
	if len(file) != backup.HeaderSize+len(data)+backup.TrailerSize {
		t.Fatalf("file of %d bytes for %d bytes of data", len(file), len(data))
	}
	r, err := backup.NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if r.Header() != h {
		t.Fatalf("header %+v, wrote %+v", r.Header(), h)
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("data read back differs")
	}
	if r.Sum() != sha256.Sum256(file[:len(file)-backup.TrailerSize]) {
		t.Fatal("Sum is not the SHA-256 of the header and the data")
	}
}

func TestEncodeRefusesWrongSize(t *testing.T) {
	for _, size := range []int{9, 11} {
		_, err := io.ReadAll(backup.Encode(sampleHeader(size), bytes.NewReader(make([]byte, 10))))
		if err == nil {
			t.Errorf("header size %d for 10 bytes of data: encoded", size)
		}
	}
}

// TestDamageIsFound: a file cut anywhere, or with any one byte changed,
// is refused, with an error that says so.
func TestDamageIsFound(t *testing.T) {
	data := []byte("some snapshot data, not too long")
	file := encode(t, sampleHeader(len(data)), data)
	verify := func(b []byte) error {
		_, _, err := backup.Verify(bytes.NewReader(b))
		return err
	}
	if err := verify(file); err != nil {
		t.Fatal(err)
	}
	for n := range len(file) {
		err := verify(file[:n])
		if !errors.Is(err, backup.ErrDamaged) && !(n == 0 && errors.Is(err, backup.ErrNotBackup)) {
			t.Errorf("cut to %d of %d bytes: %v", n, len(file), err)
		}
	}
	for i := range file {
		b := bytes.Clone(file)
		b[i] ^= 0x10
		err := verify(b)
		if err == nil {
			t.Fatalf("byte %d changed: accepted", i)
		}
		if i >= len(backup.Magic) && !errors.Is(err, backup.ErrDamaged) {
			t.Errorf("byte %d changed: %v, want damage", i, err)
		}
	}
	if err := verify(append(bytes.Clone(file), 0)); !errors.Is(err, backup.ErrDamaged) {
		t.Errorf("a byte after the trailer: %v", err)
	}
	if err := verify([]byte("CLSN\x00\x00\x00\x04 a snapshot, not a backup")); !errors.Is(err, backup.ErrNotBackup) {
		t.Errorf("another file: %v", err)
	}
}

func TestNewSecretIsDeterministicAndDistinct(t *testing.T) {
	old := bytes.Repeat([]byte{7}, backup.SecretLen)
	var sum, other [sha256.Size]byte
	other[0] = 1
	a := backup.NewSecret(old, sum, "")
	if !bytes.Equal(a, backup.NewSecret(old, sum, "")) {
		t.Fatal("the same file and token give different secrets")
	}
	for name, s := range map[string][]byte{
		"another token":  backup.NewSecret(old, sum, "copy-2"),
		"another file":   backup.NewSecret(old, other, ""),
		"another secret": backup.NewSecret(bytes.Repeat([]byte{8}, backup.SecretLen), sum, ""),
		"the old one":    old,
	} {
		if bytes.Equal(a, s) {
			t.Errorf("%s gives the same secret", name)
		}
	}
	if len(a) != backup.SecretLen {
		t.Fatalf("secret of %d bytes", len(a))
	}
}

func FuzzParseHeader(f *testing.F) {
	f.Add(sampleHeader(100).Marshal())
	f.Add([]byte(backup.Magic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := backup.ParseHeader(b)
		if err != nil {
			return
		}
		again, err := backup.ParseHeader(h.Marshal())
		if err != nil || again != h {
			t.Fatalf("header %+v reads back as %+v, %v", h, again, err)
		}
	})
}

func FuzzReader(f *testing.F) {
	data := []byte("state")
	file, _ := io.ReadAll(backup.Encode(sampleHeader(len(data)), bytes.NewReader(data)))
	f.Add(file)
	f.Add(file[:backup.HeaderSize+2])
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := backup.NewReader(bytes.NewReader(b))
		if err != nil {
			return
		}
		got, err := io.ReadAll(r)
		if err != nil {
			return
		}
		// Accepted: the file must be exactly a header, its data and the
		// trailer that sums them.
		want, _ := io.ReadAll(backup.Encode(r.Header(), bytes.NewReader(got)))
		if !bytes.Equal(want, b) {
			t.Fatalf("accepted a file that is not what its content encodes to")
		}
	})
}

// TestWriteFile: a whole file is written readable by its owner only; a
// damaged one leaves neither the file nor its temporary file behind.
func TestWriteFile(t *testing.T) {
	data := []byte("state")
	file := encode(t, sampleHeader(len(data)), data)
	dir := t.TempDir()
	path := filepath.Join(dir, "b.snap")
	h, n, err := backup.WriteFile(path, bytes.NewReader(file), int64(len(file)), nil)
	if err != nil || h != sampleHeader(len(data)) || n != int64(len(file)) {
		t.Fatalf("WriteFile: %+v, %d, %v", h, n, err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("written file: %v, %v", info.Mode(), err)
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, file) {
		t.Fatal("the written file differs from what was read")
	}
	damaged := filepath.Join(dir, "damaged.snap")
	if _, _, err := backup.WriteFile(damaged, bytes.NewReader(file[:len(file)-1]), int64(len(file)), nil); !errors.Is(err, backup.ErrDamaged) {
		t.Fatalf("WriteFile of a file cut short: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "b.snap" {
		t.Fatalf("after a damaged transfer the directory holds %v", entries)
	}
}
