package zkdata

import (
	"bytes"
	"encoding/binary"
	"hash/adler32"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/collie-io/collie/proto"
)

// txnBytes encodes a transaction as ZooKeeper logs it.
func txnBytes(h Header, body func(e *proto.Encoder), digest bool) []byte {
	e := proto.NewEncoder(nil)
	e.Long(h.Session)
	e.Int(h.Cxid)
	e.Long(h.Zxid)
	e.Long(h.Time)
	e.Int(int32(h.Type))
	body(e)
	if digest {
		e.Int(2)
		e.Long(0x1234)
	}
	return e.Bytes()
}

func sampleTxns() [][]byte {
	acl := []proto.ACL{{Perms: proto.PermAll, ID: proto.ID{Scheme: "world", ID: "anyone"}}}
	create := func(e *proto.Encoder) {
		e.String("/a")
		e.Buffer([]byte("x"))
		e.ACLs(acl)
		e.Bool(false)
		e.Int(1)
	}
	sub := txnBytes(Header{}, create, false)[32:]
	return [][]byte{
		txnBytes(Header{Session: 1, Zxid: 2, Type: proto.OpCreate}, create, true),
		txnBytes(Header{Session: 1, Zxid: 3, Type: proto.OpSetData}, func(e *proto.Encoder) { e.String("/a"); e.Buffer(nil); e.Int(1) }, false),
		txnBytes(Header{Session: 1, Zxid: 4, Type: proto.OpCloseSession}, func(e *proto.Encoder) { e.Strings([]string{"/a"}) }, true),
		txnBytes(Header{Session: 1, Zxid: 5, Type: proto.OpMulti}, func(e *proto.Encoder) {
			e.Int(1)
			e.Int(int32(proto.OpCreate))
			e.Buffer(sub)
		}, false),
	}
}

func FuzzDecodeTxn(f *testing.F) {
	for _, b := range sampleTxns() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		txn, err := DecodeTxn(b)
		if err != nil {
			return
		}
		// Whatever decodes applies without panicking.
		NewDataTree(true).Apply(txn)
	})
}

// snapshotBytes encodes a small snapshot file, sealed.
func snapshotBytes(nodes int) []byte {
	var buf bytes.Buffer
	e := proto.NewEncoder(nil)
	e.Int(snapMagic)
	e.Int(2)
	e.Long(-1)
	e.Int(1) // sessions
	e.Long(7)
	e.Int(30000)
	e.Int(1) // ACLs
	e.Long(1)
	e.ACLs([]proto.ACL{{Perms: proto.PermRead, ID: proto.ID{Scheme: "world", ID: "anyone"}}})
	node := func(path string, acl int64) {
		e.String(path)
		e.Buffer([]byte("d"))
		e.Long(acl)
		for range 4 {
			e.Long(1)
		}
		for range 3 {
			e.Int(0)
		}
		e.Long(0)
		e.Long(1)
	}
	node("", -1)
	for i := range nodes {
		node("/n"+string(rune('a'+i)), 1)
	}
	e.String("/")
	buf.Write(e.Bytes())
	seal := proto.NewEncoder(nil)
	seal.Long(int64(adler32.Checksum(buf.Bytes())))
	seal.String("/")
	buf.Write(seal.Bytes())
	return buf.Bytes()
}

func TestReadSnapshotSample(t *testing.T) {
	tr, info, err := ReadSnapshot(bytes.NewReader(snapshotBytes(3)), false)
	if err != nil {
		t.Fatal(err)
	}
	if info.Nodes != 4 || info.Sessions != 1 || tr.Sessions[7] != 30000 {
		t.Fatalf("nodes %d sessions %v", info.Nodes, tr.Sessions)
	}
	b := snapshotBytes(3)
	b[len(b)-10] ^= 1
	if _, _, err := ReadSnapshot(bytes.NewReader(b), false); err == nil {
		t.Fatal("a damaged checksum read as a good snapshot")
	}
}

func FuzzReadSnapshot(f *testing.F) {
	f.Add(snapshotBytes(2))
	f.Add(append(append([]byte{}, snappyMagic...), 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 3, 2, 4, 0x5a))
	f.Fuzz(func(t *testing.T, b []byte) {
		var in io.Reader = bytes.NewReader(b)
		if bytes.HasPrefix(b, snappyMagic[:1]) {
			in = newSnappyReader(in)
		}
		tr, _, err := ReadSnapshot(in, true)
		if err != nil {
			return
		}
		tr.Walk(func(string, *Node) error { return nil })
	})
}

// logBytes encodes a log file holding txns.
func logBytes(txns [][]byte) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, logMagic)
	b = binary.BigEndian.AppendUint32(b, 2)
	b = binary.BigEndian.AppendUint64(b, 0)
	for _, t := range txns {
		b = binary.BigEndian.AppendUint64(b, uint64(adler32.Checksum(t)))
		b = binary.BigEndian.AppendUint32(b, uint32(len(t)))
		b = append(b, t...)
		b = append(b, 'B')
	}
	return append(b, make([]byte, 64)...)
}

func FuzzReadLogFile(f *testing.F) {
	f.Add(logBytes(sampleTxns()))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "log.1")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		tr := NewDataTree(false)
		ReadLogFile(path, func(txn *Txn, _ int64) error {
			tr.Apply(txn)
			return nil
		})
	})
}

func TestReadLogFileSample(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.1")
	b := logBytes(sampleTxns())
	os.WriteFile(path, b, 0o644)
	var zxids []int64
	end, err := ReadLogFile(path, func(txn *Txn, _ int64) error { zxids = append(zxids, txn.Zxid); return nil })
	if err != nil || len(zxids) != 4 || end.Torn {
		t.Fatalf("zxids %v, end %+v, err %v", zxids, end, err)
	}
	// Cut in the middle of the last record: torn, three read.
	os.WriteFile(path, b[:len(b)-64-5], 0o644)
	zxids = nil
	end, err = ReadLogFile(path, func(txn *Txn, _ int64) error { zxids = append(zxids, txn.Zxid); return nil })
	if err != nil || len(zxids) != 3 || !end.Torn {
		t.Fatalf("cut: zxids %v, end %+v, err %v", zxids, end, err)
	}
}
