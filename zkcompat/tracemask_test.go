package zkcompat

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/internal/zkref"
)

// stmk sends stmk with its 8-byte mask and returns the reply.
func stmk(addr string, mask int64) (string, error) {
	return sendFourLetter(addr, binary.BigEndian.AppendUint64([]byte("stmk"), uint64(mask)), false)
}

// hashLine is a line of hash: a zxid in hex and a digest.
var hashLine = regexp.MustCompile(`^[0-9a-f]+: -?[0-9]+$`)

// gtmk, stmk and hash answer on Collie as on ZooKeeper 3.8: the trace mask
// ZooKeeper starts with, set and read back; the digest log, one line per
// 128 transactions.
func TestTraceMaskAndHashLikeZooKeeper(t *testing.T) {
	ref := zkref.Start(t)
	dir := t.TempDir()
	port := freeLocalPort(t)
	cfg := fmt.Sprintf("dataDir=data\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\npreAllocSize=1024\n", port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	collie := "127.0.0.1:" + strconv.Itoa(port)
	startCollie(t, dir, t.Output(), "server", "-c", "zoo.cfg", "-log-level", "warn").waitServing(t, collie, "ruok", "imok")

	const writes = 300
	for name, addr := range map[string]string{"ZooKeeper": ref.Addr(), "Collie": collie} {
		if got, err := fourLetterWord(addr, "gtmk"); err != nil || got != "306" {
			t.Errorf("%s: gtmk = %q %v, want ZooKeeper's initial mask 306", name, got, err)
		}
		if got, err := stmk(addr, 0x1ff); err != nil || got != "511" {
			t.Errorf("%s: stmk 0x1ff = %q %v, want 511", name, got, err)
		}
		if got, err := fourLetterWord(addr, "gtmk"); err != nil || got != "511" {
			t.Errorf("%s: gtmk after stmk = %q %v, want 511", name, got, err)
		}
		// A mask cut short sets nothing and gets no answer.
		if got, err := sendFourLetter(addr, []byte("stmk\x00\x01"), true); got != "" {
			t.Errorf("%s: stmk with 2 bytes of its mask = %q %v, want nothing", name, got, err)
		}
		if got, err := fourLetterWord(addr, "gtmk"); err != nil || got != "511" {
			t.Errorf("%s: gtmk after a short stmk = %q %v, want 511 still", name, got, err)
		}
		if got, err := fourLetterWord(addr, "hash"); err != nil || got != "" {
			t.Errorf("%s: hash before 128 transactions = %q %v, want nothing", name, got, err)
		}
		c := connectSession(t, addr, 10*time.Second)
		for i := range writes {
			if _, err := c.Create(fmt.Sprintf("/h%d", i), []byte("x"), 0, openACL); err != nil {
				t.Fatal(err)
			}
		}
		got, err := fourLetterWord(addr, "hash")
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if err != nil || len(lines) != 2 {
			t.Errorf("%s: hash after %d writes = %q %v, want 2 lines", name, writes, got, err)
			continue
		}
		for _, line := range lines {
			if !hashLine.MatchString(line) {
				t.Errorf("%s: hash line %q, want zxid: digest", name, line)
			}
		}
	}
}

// Every member of an ensemble has the same digest after the same
// transactions.
func TestHashAgreesAcrossEnsemble(t *testing.T) {
	e := startProcessEnsemble(t, 3, 500*time.Millisecond)
	c := connectSession(t, e.addrs[0], 10*time.Second)
	for i := range 300 {
		if _, err := c.Create(fmt.Sprintf("/h%d", i), []byte(strconv.Itoa(i)), 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	want, err := fourLetterWord(e.addrs[0], "hash")
	if err != nil || strings.Count(want, "\n") < 2 {
		t.Fatalf("hash on the first member: %q %v", want, err)
	}
	for _, addr := range e.addrs[1:] {
		other := connectSession(t, addr, 10*time.Second)
		if _, err := other.Sync("/"); err != nil {
			t.Fatal(err)
		}
		got, err := fourLetterWord(addr, "hash")
		// A member may have applied more (the sessions above): compare
		// the lines the first one has.
		if err != nil || !strings.HasPrefix(got, want) {
			t.Errorf("hash on %s = %q %v, want it to begin with the first member's %q", addr, got, err, want)
		}
	}
}
