package inspect

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/zkdata"
	"github.com/collie-io/collie/server/zkimport"
)

// ZooKeeper's inputs: its data directory, a snapshot file, a log file.
// They come before Collie's data directory in Kinds, which matches any
// directory.
var zooKeeperKinds = []Kind{
	{
		Name:  "zookeeper data directory",
		Match: func(path string, dir bool, _ []byte) bool { return dir && isZooKeeperDir(path) },
		Dump:  dumpZooKeeperDir,
	},
	{
		Name: "zookeeper snapshot",
		Match: func(_ string, dir bool, head []byte) bool {
			return !dir && len(head) >= 4 && (binary.BigEndian.Uint32(head) == 0x5a4b534e || // "ZKSN"
				head[0] == 0x1f && head[1] == 0x8b || // gzip
				head[0] == 0x82 && string(head[1:4]) == "SNA") // snappy-java
		},
		Dump: dumpZooKeeperSnapshot,
	},
	{
		Name: "zookeeper transaction log",
		Match: func(_ string, dir bool, head []byte) bool {
			return !dir && len(head) >= 4 && binary.BigEndian.Uint32(head) == 0x5a4b4c47 // "ZKLG"
		},
		Dump: dumpZooKeeperLog,
	},
}

func init() { Kinds = append(zooKeeperKinds, Kinds...) }

// isZooKeeperDir reports whether dir is a ZooKeeper dataDir (or its
// version-2 directory) rather than a Collie one.
func isZooKeeperDir(dir string) bool {
	for _, d := range []string{dir, filepath.Join(dir, "version-2")} {
		if filepath.Base(d) != "version-2" {
			continue
		}
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "snapshot.") || strings.HasPrefix(e.Name(), "log.") {
				return true
			}
		}
	}
	return false
}

// zooKeeperState converts a ZooKeeper tree for writeState, with no
// ensemble of Collie's.
func zooKeeperState(t *zkdata.DataTree, opts Options) (*fsm.FSM, error) {
	res, err := zkimport.Convert(t, zkimport.Options{FSM: opts.FSM, Secret: make([]byte, fsm.SecretLen)})
	if err != nil {
		return nil, err
	}
	return res.FSM, nil
}

func dumpZooKeeperDir(path string, w io.Writer, opts Options) error {
	t, rep, err := zkdata.Load(zkdata.LoadOptions{DataDir: path, DataLogDir: opts.LogDir, Extended: opts.FSM.ExtendedTypes})
	if err != nil {
		return err
	}
	f, err := zooKeeperState(t, opts)
	if err != nil {
		return err
	}
	return writeState(w, Description{Kind: "zookeeper data directory", Path: path, Index: uint64(rep.LastZxid), Ensemble: "none"}, f, opts)
}

func dumpZooKeeperSnapshot(path string, w io.Writer, opts Options) error {
	t, info, err := zkdata.ReadSnapshotFile(path, opts.FSM.ExtendedTypes)
	if err != nil {
		return err
	}
	f, err := zooKeeperState(t, opts)
	if err != nil {
		return err
	}
	return writeState(w, Description{Kind: "zookeeper snapshot", Path: path, Index: uint64(info.Zxid), Ensemble: "none"}, f, opts)
}

// TxnJSON is one logged ZooKeeper transaction, as collie dump prints it.
type TxnJSON struct {
	Offset  int64  `json:"offset"`
	Zxid    string `json:"zxid"`
	Time    string `json:"time"`
	Session string `json:"session"`
	Cxid    string `json:"cxid"`
	Type    string `json:"type"`
	// Record is the transaction's record, as its fields.
	Record any `json:"record,omitempty"`
}

func dumpZooKeeperLog(path string, w io.Writer, opts Options) error {
	enc := json.NewEncoder(w)
	end, err := zkdata.ReadLogFile(path, func(t *zkdata.Txn, off int64) error {
		v := TxnJSON{
			Offset: off, Zxid: "0x" + strconv.FormatInt(t.Zxid, 16),
			Time:    time.UnixMilli(t.Time).UTC().Format(time.RFC3339Nano),
			Session: "0x" + strconv.FormatUint(uint64(t.Session), 16),
			Cxid:    "0x" + strconv.FormatUint(uint64(uint32(t.Cxid)), 16),
			Type:    t.Type.String(), Record: t.Record,
		}
		if opts.JSON {
			return enc.Encode(v)
		}
		_, err := fmt.Fprintf(w, "%s %s session %s cxid %s zxid %s %s %s\n", v.Time, path, v.Session, v.Cxid, v.Zxid, v.Type, describeRecord(t.Record))
		return err
	})
	if err != nil {
		return err
	}
	if end.Torn {
		fmt.Fprintf(w, "# %s ends with a write cut short at offset %d (%d bytes)\n", path, end.Offset, end.TornBytes)
	}
	if !opts.JSON {
		_, err = fmt.Fprintf(w, "# %s: %d transactions, to offset %d\n", path, end.Txns, end.Offset)
	}
	return err
}

// describeRecord writes a transaction's record on one line, data quoted.
func describeRecord(rec any) string {
	switch r := rec.(type) {
	case nil:
		return ""
	case *zkdata.CreateTxn:
		return fmt.Sprintf("%s %q %s ephemeral=%v parentCversion=%d", r.Path, r.Data, acls(r.ACL), r.Ephemeral, r.ParentCversion)
	case *zkdata.SetDataTxn:
		return fmt.Sprintf("%s %q version=%d", r.Path, r.Data, r.Version)
	case *zkdata.MultiTxn:
		parts := make([]string, len(r.Txns))
		for i, s := range r.Txns {
			parts[i] = s.Type.String() + " " + describeRecord(s.Record)
		}
		return "[" + strings.Join(parts, "; ") + "]"
	case *zkdata.ErrorTxn:
		return fmt.Sprintf("err=%d", r.Err)
	}
	s := fmt.Sprintf("%+v", rec)
	return strings.TrimPrefix(s, "&")
}

func acls(list []proto.ACL) string {
	parts := make([]string, len(list))
	for i, a := range list {
		parts[i] = a.ID.Scheme + ":" + a.ID.ID + ":" + proto.PermString(a.Perms)
	}
	return "[" + strings.Join(parts, ",") + "]"
}
