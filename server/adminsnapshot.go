package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/admin"
	"github.com/collie-io/collie/server/backup"
	"github.com/collie-io/collie/server/conn"
	"github.com/collie-io/collie/server/tree"
	"github.com/collie-io/collie/server/x500"
)

var _ admin.Snapshotter = (*adminBackend)(nil)

// Authorize authenticates an admin command's Authorization header as
// ZooKeeper 3.9's admin server does: "scheme" or "scheme auth", handed to
// that scheme's provider (digest with "user:password", and the super
// digest; ip, the client's address; x509, the HTTPS client's verified
// certificate), then each bit of the permission checked against path's
// ACL.
func (a *adminBackend) Authorize(req admin.AuthRequest) error {
	s := (*Server)(a)
	// Java's String.split(" "): trailing empty parts are dropped.
	parts := strings.Split(req.Info, " ")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) != 1 && len(parts) != 2 {
		return admin.ErrNotAuthenticated
	}
	var ids []proto.ID
	switch parts[0] {
	case tree.SchemeDigest:
		if len(parts) != 2 {
			return admin.ErrNotAuthenticated
		}
		id := proto.ID{Scheme: tree.SchemeDigest, ID: tree.DigestID(parts[1])}
		if s.cfg.SuperDigest != "" && id.ID == s.cfg.SuperDigest {
			ids = append(ids, proto.ID{Scheme: tree.SchemeSuper, ID: ""})
		}
		ids = append(ids, id)
	case tree.SchemeIP:
		addr, err := net.ResolveTCPAddr("tcp", req.Request.RemoteAddr)
		if err != nil {
			return admin.ErrNotAuthenticated
		}
		ids = append(ids, proto.ID{Scheme: tree.SchemeIP, ID: conn.IPIdentity(addr)})
	case tree.SchemeX509:
		tc := req.Request.TLS
		if tc == nil || len(tc.VerifiedChains) == 0 || !s.cfg.X509Scheme() {
			return admin.ErrNotAuthenticated
		}
		subject, err := x500.Name(tc.PeerCertificates[0].RawSubject)
		if err != nil {
			return admin.ErrNotAuthenticated
		}
		if s.cfg.X509SuperUser != "" && subject == s.cfg.X509SuperUser {
			ids = append(ids, proto.ID{Scheme: tree.SchemeSuper, ID: subject})
		}
		ids = append(ids, proto.ID{Scheme: tree.SchemeX509, ID: subject})
	default:
		return admin.ErrNotAuthenticated
	}
	s.mu.RLock()
	n, _ := s.fsm.Tree().Get(req.Path)
	var acl []proto.ACL
	if n != nil {
		acl = s.fsm.Tree().ACL(n)
	}
	rules := s.fsm.ReadRules()
	s.mu.RUnlock()
	if n == nil {
		return fmt.Errorf("server: %s: %w", req.Path, proto.ErrNoNode)
	}
	for bit := int32(1); bit <= req.Perm; bit <<= 1 {
		if req.Perm&bit != 0 && !tree.CheckACL(acl, bit, ids, rules) {
			return admin.ErrNotAuthorized
		}
	}
	return nil
}

// TakeSnapshot has the raft node write a snapshot of everything applied,
// as it does every snapCount entries, and streams that file as a backup
// file: ZooKeeper 3.9's snapshot command also writes a snapshot to its
// data directory and streams it.
func (a *adminBackend) TakeSnapshot(ctx context.Context) (admin.SnapshotStream, error) {
	s := (*Server)(a)
	if s.node == nil {
		return admin.SnapshotStream{}, errors.New("server: not started")
	}
	meta, data, err := s.node.TakeSnapshot(ctx)
	if err != nil {
		return admin.SnapshotStream{}, err
	}
	h := backup.Header{
		Index:    meta.Index,
		Term:     meta.Term,
		Zxid:     int64(meta.Index),
		Ensemble: s.ensembleID.Load(),
		Server:   s.id,
		Taken:    time.Now(),
		Size:     data.Size(),
	}
	s.log.Info("streaming a snapshot for the snapshot admin command", "zxid", fmt.Sprintf("%#x", meta.Index), "bytes", h.Size)
	return admin.SnapshotStream{
		LastZxid: h.Zxid,
		Size:     int64(backup.HeaderSize) + h.Size + int64(backup.TrailerSize),
		Body: struct {
			io.Reader
			io.Closer
		}{backup.Encode(h, data), data},
	}, nil
}
