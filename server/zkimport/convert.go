// Package zkimport owns taking over an Apache ZooKeeper ensemble's
// database: turning the DataTree and sessions zkdata reads into the state
// a new Collie data directory starts from, with every node's data, ACL
// and Stat as ZooKeeper had them, the sessions that were open, and zxids
// that go on from ZooKeeper's last.
package zkimport

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/tree"
	"github.com/collie-io/collie/server/zkdata"
)

// Options choose how a ZooKeeper database becomes Collie's.
type Options struct {
	// FSM are the state machine's settings (extendedTypesEnabled); they
	// must be those the ZooKeeper servers ran with.
	FSM fsm.Options
	// DropSessions closes every session that was open, deleting its
	// ephemerals, as ZooKeeper does when a session expires, each close a
	// transaction of its own after ZooKeeper's last. By default the
	// sessions are kept: a client that reconnects with its session keeps
	// its ephemerals, and one that does not loses them when its timeout
	// passes, as when a ZooKeeper ensemble restarts.
	DropSessions bool
	// Now is the time of the closes DropSessions makes; zero means now.
	Now time.Time
	// Digest, when set, is the digest ZooKeeper logged with the
	// database's last transaction (zkdata.Report.LastDigest): Convert
	// refuses a tree whose digest differs.
	Digest *zkdata.TxnDigest
	// Secret is the new ensemble's session secret. When nil, it is made
	// from EnsembleToken and the data (EnsembleSecret), so that every
	// member importing the same data gets the same one, or at random for
	// a standalone server, without a token.
	Secret        []byte
	EnsembleToken string
}

// Result says what Convert made.
type Result struct {
	FSM *fsm.FSM
	// LastZxid is the zxid the state stands at: ZooKeeper's last, or
	// the last of the closes DropSessions made.
	LastZxid int64
	Nodes    int
	Sessions int
	// Dropped are the sessions DropSessions closed, with how many
	// ephemerals each had.
	Dropped map[int64]int
}

// ErrDigestMismatch is returned by Convert when the tree it made does not
// have the digest ZooKeeper logged for it.
var ErrDigestMismatch = errors.New("zkimport: the tree's digest is not ZooKeeper's")

// Convert makes Collie's state from a ZooKeeper database. With
// opts.Digest, it first checks that the tree has the digest ZooKeeper
// logged with its last transaction; then, with DropSessions, it closes the
// sessions.
func Convert(t *zkdata.DataTree, opts Options) (*Result, error) {
	if t.LastZxid < 0 {
		return nil, fmt.Errorf("zkimport: the ZooKeeper database is at zxid %d", t.LastZxid)
	}
	res := &Result{}
	ids := make([]int64, 0, len(t.Sessions))
	for id := range t.Sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	secret := opts.Secret
	if secret == nil && opts.EnsembleToken != "" {
		// Members that import the same data with the same choice about
		// sessions get the same secret.
		token := opts.EnsembleToken
		if opts.DropSessions {
			token += "\x00drop-sessions"
		}
		secret = EnsembleSecret(Digest(t), token)
	}
	if secret == nil {
		secret = make([]byte, fsm.SecretLen)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("zkimport: session secret: %w", err)
		}
	}
	st := fsm.BuildState{Applied: uint64(t.LastZxid), Secret: secret}
	for _, id := range ids {
		st.Sessions = append(st.Sessions, fsm.Session{ID: id, Timeout: t.Sessions[id], ZooKeeper: true})
	}
	f, err := fsm.Build(opts.FSM, st, func(add func(string, *tree.Node, []proto.ACL) error) error {
		return t.Walk(func(path string, n *zkdata.Node) error {
			if path == tree.ConfigPath {
				// ZooKeeper's /zookeeper/config lists its own servers;
				// clients that follow it (Curator's EnsembleTracker)
				// must not be sent back to them. Collie's is kept.
				return nil
			}
			s := n.Stat
			return add(path, &tree.Node{
				Data:  n.Data,
				Czxid: s.Czxid, Mzxid: s.Mzxid, Pzxid: s.Pzxid,
				Ctime: s.Ctime, Mtime: s.Mtime,
				Version: s.Version, Cversion: s.Cversion, Aversion: s.Aversion,
				EphemeralOwner: s.EphemeralOwner,
			}, n.ACL)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("zkimport: %w", err)
	}
	if d := opts.Digest; d != nil {
		// Nodes under /zookeeper/ count for nothing in the digest, so
		// leaving ZooKeeper's /zookeeper/config out changes nothing.
		if got := f.Tree().Digest(); got != d.TreeDigest {
			return nil, fmt.Errorf("%w: ZooKeeper logged %d with its last transaction, the tree made from its files has %d", ErrDigestMismatch, d.TreeDigest, got)
		}
	}
	if opts.DropSessions {
		now := opts.Now
		if now.IsZero() {
			now = time.Now()
		}
		res.Dropped = make(map[int64]int, len(ids))
		for _, id := range ids {
			res.Dropped[id] = len(t.Ephemerals(id))
			r := f.ApplyZooKeeper(&zkdata.Txn{Header: zkdata.Header{Session: id, Zxid: f.LastZxid() + 1, Time: now.UnixMilli(), Type: proto.OpCloseSession}})
			if r.Zxid == 0 {
				return nil, fmt.Errorf("zkimport: close session %#x: %v", id, r.Err)
			}
		}
	}
	res.FSM, res.LastZxid = f, f.LastZxid()
	res.Nodes, res.Sessions = f.Tree().Len(), len(f.Sessions())
	return res, nil
}
