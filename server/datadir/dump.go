package datadir

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/storage"
	"github.com/collie-io/collie/server/tree"
)

// DumpEntries writes the log's entries, oldest first, as the log holds
// them: where an index was written more than once (a new leader replacing
// uncommitted entries), the last write, as a server reads it. Each entry
// is a line of text, or with asJSON a JSON object per line. It returns what
// the scan of the log found (problems it could not read past).
func (d *Dir) DumpEntries(w io.Writer, asJSON bool) (*storage.WALScan, error) {
	// The first pass finds the writes that stand; the second prints them.
	// Raft overwrites from an index on, so the writes that stand are a
	// stack: a write at index i replaces every write at i and above.
	type write struct{ n, index uint64 }
	var (
		stack []write
		n     uint64
	)
	_, err := storage.ScanWAL(d.WALDir, func(r storage.WALRecord) error {
		if r.Entry == nil {
			return nil
		}
		for len(stack) > 0 && stack[len(stack)-1].index >= r.Entry.Index {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, write{n, r.Entry.Index})
		n++
		return nil
	})
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	n = 0
	next := 0
	scan, err := storage.ScanWAL(d.WALDir, func(r storage.WALRecord) error {
		if r.Entry == nil {
			return nil
		}
		this := n
		n++
		if next >= len(stack) || stack[next].n != this {
			return nil
		}
		next++
		v := describeEntry(r)
		if asJSON {
			return enc.Encode(v)
		}
		_, err := io.WriteString(bw, v.text()+"\n")
		return err
	})
	if err != nil {
		return nil, err
	}
	return scan, bw.Flush()
}

// EntryJSON is one entry of the log as DumpEntries writes it.
type EntryJSON struct {
	Segment string `json:"segment"`
	Offset  int64  `json:"offset"`
	Index   uint64 `json:"index"`
	Term    uint64 `json:"term"`
	// Type is raft's: normal, conf_change or conf_change_v2.
	Type       string          `json:"type"`
	Entry      *FSMEntryJSON   `json:"entry,omitempty"`
	ConfChange *ConfChangeJSON `json:"conf_change,omitempty"`
	// Error says why the entry's data could not be decoded.
	Error string `json:"error,omitempty"`
}

// FSMEntryJSON is a state machine entry (fsm.Entry), decoded.
type FSMEntryJSON struct {
	Version uint8  `json:"version"`
	Type    string `json:"type"`
	ReqID   uint64 `json:"req_id,omitempty"`
	Origin  uint64 `json:"origin,omitempty"`
	// Session is hex, as ZooKeeper writes session ids.
	Session string   `json:"session,omitempty"`
	Cxid    int32    `json:"cxid,omitempty"`
	Time    int64    `json:"time,omitempty"`
	Timeout int32    `json:"timeout,omitempty"`
	Op      string   `json:"op,omitempty"`
	Auth    []IDJSON `json:"auth,omitempty"`
	// EnforceQuota is a request's server enforcing quotas.
	EnforceQuota bool `json:"enforce_quota,omitempty"`
	// Path is the request's path, or the container's.
	Path    string       `json:"path,omitempty"`
	Request *RequestJSON `json:"request,omitempty"`
	// Member is the voter a member_log entry records.
	Member uint64 `json:"member,omitempty"`
	// SecretBytes is the length of a set_secret entry's secret, which is
	// not shown: session passwords are made from it.
	SecretBytes int    `json:"secret_bytes,omitempty"`
	Error       string `json:"error,omitempty"`
}

// RequestJSON is a write request's record.
type RequestJSON struct {
	Op         string         `json:"op,omitempty"`
	Path       string         `json:"path,omitempty"`
	Data       *string        `json:"data,omitempty"`
	DataBase64 string         `json:"dataBase64,omitempty"`
	ACL        []ACLJSON      `json:"acl,omitempty"`
	Mode       string         `json:"mode,omitempty"`
	TTL        int64          `json:"ttl,omitempty"`
	Version    *int32         `json:"version,omitempty"`
	Ops        []*RequestJSON `json:"ops,omitempty"`
}

// ConfChangeJSON is a raft configuration change.
type ConfChangeJSON struct {
	Changes []ConfChangeOpJSON `json:"changes"`
}

// ConfChangeOpJSON is one change of a configuration change.
type ConfChangeOpJSON struct {
	Type   string `json:"type"`
	NodeID uint64 `json:"node_id"`
}

// IDJSON is an identity.
type IDJSON struct {
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
}

// ACLJSON is an ACL entry, its permissions as zkCli.sh writes them.
type ACLJSON struct {
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
	Perms  string `json:"perms"`
}

var entryTypes = map[fsm.EntryType]string{
	fsm.EntryCreateSession:   "create_session",
	fsm.EntryCloseSession:    "close_session",
	fsm.EntryRequest:         "request",
	fsm.EntryDeleteContainer: "delete_container",
	fsm.EntrySetSecret:       "set_secret",
	fsm.EntryMoveSession:     "move_session",
	fsm.EntryMemberLog:       "member_log",
}

func describeEntry(r storage.WALRecord) *EntryJSON {
	e := r.Entry
	v := &EntryJSON{Segment: r.Segment, Offset: r.Offset, Index: e.Index, Term: e.Term}
	switch e.Type {
	case raftpb.EntryNormal:
		v.Type = "normal"
		if len(e.Data) == 0 {
			return v
		}
		fe, err := fsm.UnmarshalEntry(e.Data)
		if err != nil {
			v.Error = err.Error()
			return v
		}
		v.Entry = describeFSMEntry(fe)
	case raftpb.EntryConfChange, raftpb.EntryConfChangeV2:
		var cc raftpb.ConfChangeI
		var err error
		if e.Type == raftpb.EntryConfChange {
			v.Type = "conf_change"
			var c raftpb.ConfChange
			err, cc = c.Unmarshal(e.Data), c
		} else {
			v.Type = "conf_change_v2"
			var c raftpb.ConfChangeV2
			err, cc = c.Unmarshal(e.Data), c
		}
		if err != nil {
			v.Error = err.Error()
			return v
		}
		v.ConfChange = &ConfChangeJSON{Changes: []ConfChangeOpJSON{}}
		for _, c := range cc.AsV2().Changes {
			v.ConfChange.Changes = append(v.ConfChange.Changes, ConfChangeOpJSON{Type: confChangeType(c.Type), NodeID: c.NodeID})
		}
	default:
		v.Type = fmt.Sprintf("type_%d", e.Type)
	}
	return v
}

func confChangeType(t raftpb.ConfChangeType) string {
	switch t {
	case raftpb.ConfChangeAddNode:
		return "add_node"
	case raftpb.ConfChangeRemoveNode:
		return "remove_node"
	case raftpb.ConfChangeUpdateNode:
		return "update_node"
	case raftpb.ConfChangeAddLearnerNode:
		return "add_learner_node"
	}
	return fmt.Sprintf("type_%d", t)
}

func describeFSMEntry(e *fsm.Entry) *FSMEntryJSON {
	v := &FSMEntryJSON{Version: e.Version, Type: entryTypes[e.Type], ReqID: e.ReqID, Origin: e.Origin, Cxid: e.Cxid, Time: e.Time, Timeout: e.Timeout,
		EnforceQuota: e.EnforceQuota}
	if e.Session != 0 {
		v.Session = hex(e.Session)
	}
	for _, id := range e.Auth {
		v.Auth = append(v.Auth, IDJSON{Scheme: id.Scheme, ID: id.ID})
	}
	switch e.Type {
	case fsm.EntryRequest:
		v.Op = opName(e.Op)
		req, ok := proto.NewRequest(e.Op)
		if !ok || req == nil {
			v.Error = fmt.Sprintf("opcode %d carries no request record", e.Op)
			break
		}
		if err := proto.Unmarshal(e.Body, req); err != nil {
			v.Error = fmt.Sprintf("request record: %v", err)
			break
		}
		v.Request = describeRequest(e.Op, req)
		v.Path = v.Request.Path
	case fsm.EntryDeleteContainer:
		v.Path = string(e.Body)
	case fsm.EntrySetSecret:
		v.SecretBytes = len(e.Body)
	case fsm.EntryMemberLog:
		if len(e.Body) == 8 {
			v.Member = binary.BigEndian.Uint64(e.Body)
		} else {
			v.Error = fmt.Sprintf("member id of %d bytes", len(e.Body))
		}
	}
	return v
}

func opName(op proto.OpCode) string {
	if s := op.String(); s != "unknown" {
		return s
	}
	return fmt.Sprintf("op_%d", int32(op))
}

var modeNames = map[proto.CreateMode]string{
	proto.ModePersistent:                  "persistent",
	proto.ModeEphemeral:                   "ephemeral",
	proto.ModePersistentSequential:        "persistent_sequential",
	proto.ModeEphemeralSequential:         "ephemeral_sequential",
	proto.ModeContainer:                   "container",
	proto.ModePersistentWithTTL:           "persistent_ttl",
	proto.ModePersistentSequentialWithTTL: "persistent_sequential_ttl",
}

func modeName(m proto.CreateMode) string {
	if s, ok := modeNames[m]; ok {
		return s
	}
	return fmt.Sprintf("mode_%d", int32(m))
}

func describeRequest(op proto.OpCode, req proto.Record) *RequestJSON {
	v := &RequestJSON{}
	version := func(n int32) { v.Version = &n }
	switch r := req.(type) {
	case *proto.CreateRequest:
		v.Path, v.ACL, v.Mode = r.Path, acls(r.ACL), modeName(r.Flags)
		v.Data, v.DataBase64 = data(r.Data)
	case *proto.CreateTTLRequest:
		v.Path, v.ACL, v.Mode, v.TTL = r.Path, acls(r.ACL), modeName(r.Flags), r.TTL
		v.Data, v.DataBase64 = data(r.Data)
	case *proto.DeleteRequest:
		v.Path = r.Path
		version(r.Version)
	case *proto.SetDataRequest:
		v.Path = r.Path
		v.Data, v.DataBase64 = data(r.Data)
		version(r.Version)
	case *proto.SetACLRequest:
		v.Path, v.ACL = r.Path, acls(r.ACL)
		version(r.Version)
	case *proto.CheckVersionRequest:
		v.Path = r.Path
		version(r.Version)
	case *proto.MultiRequest:
		for _, o := range r.Ops {
			sub := &RequestJSON{}
			if o.Req != nil {
				sub = describeRequest(o.Type, o.Req)
			}
			sub.Op = opName(o.Type)
			v.Ops = append(v.Ops, sub)
		}
	}
	return v
}

// data is a node's data as the shell's -json output has it: text when it
// is UTF-8, else base64; nil for null.
func data(b []byte) (*string, string) {
	switch {
	case b == nil:
		return nil, ""
	case utf8.Valid(b):
		s := string(b)
		return &s, ""
	}
	return nil, base64.StdEncoding.EncodeToString(b)
}

func acls(list []proto.ACL) []ACLJSON {
	out := make([]ACLJSON, len(list))
	for i, a := range list {
		out[i] = ACLJSON{Scheme: a.ID.Scheme, ID: a.ID.ID, Perms: proto.PermString(a.Perms)}
	}
	return out
}

func hex(v int64) string { return "0x" + strconv.FormatUint(uint64(v), 16) }

// text writes an entry on one line, ending with where it is in the form
// truncate's -at takes.
func (v *EntryJSON) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d term=%d %s", v.Index, v.Term, v.Type)
	if v.Type == "normal" && v.Entry == nil && v.Error == "" {
		// What a new leader appends first.
		b.WriteString(" empty")
	}
	if e := v.Entry; e != nil {
		fmt.Fprintf(&b, " %s v%d", e.Type, e.Version)
		kv := func(k, val string) {
			if val != "" {
				fmt.Fprintf(&b, " %s=%s", k, val)
			}
		}
		kv("session", e.Session)
		if e.Cxid != 0 {
			kv("cxid", strconv.Itoa(int(e.Cxid)))
		}
		if e.Origin != 0 {
			kv("origin", strconv.FormatUint(e.Origin, 10))
		}
		if e.Timeout != 0 {
			kv("timeout", strconv.Itoa(int(e.Timeout)))
		}
		kv("op", e.Op)
		if e.Request != nil {
			writeRequest(&b, e.Request)
		} else if e.Path != "" {
			kv("path", strconv.Quote(e.Path))
		}
		if e.Member != 0 {
			kv("member", strconv.FormatUint(e.Member, 10))
		}
		if e.SecretBytes != 0 {
			kv("secret", fmt.Sprintf("(%d bytes)", e.SecretBytes))
		}
		for _, id := range e.Auth {
			kv("auth", id.Scheme+":"+id.ID)
		}
		if e.EnforceQuota {
			kv("enforce_quota", "true")
		}
		kv("error", e.Error)
	}
	if c := v.ConfChange; c != nil {
		for _, op := range c.Changes {
			fmt.Fprintf(&b, " %s=%d", op.Type, op.NodeID)
		}
	}
	if v.Error != "" {
		fmt.Fprintf(&b, " error=%q", v.Error)
	}
	fmt.Fprintf(&b, "  @%s:%d", v.Segment, v.Offset)
	return b.String()
}

func writeRequest(b *strings.Builder, r *RequestJSON) {
	if r.Op != "" {
		fmt.Fprintf(b, " %s", r.Op)
	}
	if r.Path != "" {
		fmt.Fprintf(b, " path=%q", r.Path)
	}
	if r.Data != nil {
		fmt.Fprintf(b, " data=%q", *r.Data)
	}
	if r.DataBase64 != "" {
		fmt.Fprintf(b, " data=base64:%s", r.DataBase64)
	}
	if r.Mode != "" {
		fmt.Fprintf(b, " mode=%s", r.Mode)
	}
	if r.TTL != 0 {
		fmt.Fprintf(b, " ttl=%d", r.TTL)
	}
	if r.Version != nil {
		fmt.Fprintf(b, " version=%d", *r.Version)
	}
	for _, a := range r.ACL {
		fmt.Fprintf(b, " acl=%s:%s:%s", a.Scheme, a.ID, a.Perms)
	}
	for _, op := range r.Ops {
		b.WriteString(" [")
		writeRequest(b, op)
		b.WriteString(" ]")
	}
}

// NodeJSON is a znode as DumpTree writes it: its data (text when it is
// UTF-8, else base64), its Stat as a client sees it and its ACL, under
// the names collie cli -json uses.
type NodeJSON struct {
	Path       string    `json:"path"`
	Data       *string   `json:"data"`
	DataBase64 string    `json:"dataBase64,omitempty"`
	Stat       StatJSON  `json:"stat"`
	ACL        []ACLJSON `json:"acl"`
}

// StatJSON is a Stat under zkCli.sh's names; zxids and the owner in hex.
type StatJSON struct {
	Czxid          string `json:"cZxid"`
	Ctime          int64  `json:"ctime"`
	Mzxid          string `json:"mZxid"`
	Mtime          int64  `json:"mtime"`
	Pzxid          string `json:"pZxid"`
	Cversion       int32  `json:"cversion"`
	DataVersion    int32  `json:"dataVersion"`
	ACLVersion     int32  `json:"aclVersion"`
	EphemeralOwner string `json:"ephemeralOwner"`
	DataLength     int32  `json:"dataLength"`
	NumChildren    int32  `json:"numChildren"`
}

// DumpTree writes every znode of the state a start restores (see Load),
// parents before children and siblings in order, one per line: text, or
// with asJSON a JSON object. Nodes are written as the tree is walked, so
// the tree is in memory once, never its dump.
func (d *Dir) DumpTree(w io.Writer, asJSON bool) error {
	st, err := d.Load(true)
	if err != nil {
		return err
	}
	return WriteTree(w, st.FSM, asJSON)
}

// WriteTree writes every znode of f as DumpTree does.
func WriteTree(w io.Writer, f *fsm.FSM, asJSON bool) error {
	t := f.Tree()
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var err error
	t.Walk(func(path string, n *tree.Node) bool {
		s := t.Stat(n)
		v := NodeJSON{Path: path, ACL: acls(t.ACL(n)), Stat: StatJSON{
			Czxid: hex(s.Czxid), Ctime: s.Ctime, Mzxid: hex(s.Mzxid), Mtime: s.Mtime, Pzxid: hex(s.Pzxid),
			Cversion: s.Cversion, DataVersion: s.Version, ACLVersion: s.Aversion,
			EphemeralOwner: hex(s.EphemeralOwner), DataLength: s.DataLength, NumChildren: s.NumChildren,
		}}
		v.Data, v.DataBase64 = data(n.Data)
		if asJSON {
			err = enc.Encode(v)
		} else {
			_, err = io.WriteString(bw, v.text()+"\n")
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// SessionJSON is an open session as WriteSessions writes it.
type SessionJSON struct {
	Session string `json:"session"`
	Timeout int32  `json:"timeout"`
	// Owner is the server the session is connected through, as far as
	// the log knows.
	Owner uint64 `json:"owner"`
}

// WriteSessions writes f's open sessions, by id, one per line: text, or
// with asJSON a JSON object.
func WriteSessions(w io.Writer, f *fsm.FSM, asJSON bool) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, s := range f.Sessions() {
		v := SessionJSON{Session: hex(s.ID), Timeout: s.Timeout, Owner: s.Owner}
		var err error
		if asJSON {
			err = enc.Encode(v)
		} else {
			_, err = fmt.Fprintf(bw, "session %s timeout=%d owner=%d\n", v.Session, v.Timeout, v.Owner)
		}
		if err != nil {
			return err
		}
	}
	return bw.Flush()
}

func (v *NodeJSON) text() string {
	var b strings.Builder
	b.WriteString(v.Path)
	switch {
	case v.Data != nil:
		fmt.Fprintf(&b, " data=%q", *v.Data)
	case v.DataBase64 != "":
		fmt.Fprintf(&b, " data=base64:%s", v.DataBase64)
	default:
		b.WriteString(" data=null")
	}
	s := v.Stat
	fmt.Fprintf(&b, " cZxid=%s ctime=%d mZxid=%s mtime=%d pZxid=%s cversion=%d dataVersion=%d aclVersion=%d ephemeralOwner=%s dataLength=%d numChildren=%d",
		s.Czxid, s.Ctime, s.Mzxid, s.Mtime, s.Pzxid, s.Cversion, s.DataVersion, s.ACLVersion, s.EphemeralOwner, s.DataLength, s.NumChildren)
	for _, a := range v.ACL {
		fmt.Fprintf(&b, " acl=%s:%s:%s", a.Scheme, a.ID, a.Perms)
	}
	return b.String()
}
