package follow

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/datadir"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/tree"
	"github.com/collie-io/collie/server/zkdata"
)

// MarkerPath is the znode whose creation through the ZooKeeper ensemble
// is the cut-over. Every follower applies the ensemble's transactions in
// the same order, so each meets the marker at the same zxid, with the
// same tree before it: that zxid is where the Collie ensemble starts,
// and no follower needs to hear from another to agree on it. Nothing a
// follower acknowledged comes after it, since a follower stops applying
// there; what ZooKeeper commits after it (writes still in flight, writes
// of clients connected to ZooKeeper itself) is not in Collie.
const MarkerPath = "/collie-cutover"

// A Plan is what the marker holds: the servers (myids) that form the
// Collie ensemble, every one a follower of the ZooKeeper ensemble, and a
// random token the ensemble's session secret is made from. Nobody but
// ZooKeeper's super user can read it (the marker's ACL grants nothing),
// and `collie cutover` deletes the marker once the ensemble serves.
type Plan struct {
	Members []uint64 `json:"members"`
	Token   string   `json:"token"`
}

// minTokenLen is the shortest token a plan may carry: the session
// passwords of the Collie ensemble depend on it.
const minTokenLen = 32

// ParsePlan reads and checks a marker's data.
func ParsePlan(data []byte) (Plan, error) {
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return Plan{}, fmt.Errorf("follow: the cut-over plan: %w", err)
	}
	if len(p.Members) == 0 {
		return Plan{}, errors.New("follow: the cut-over plan names no member")
	}
	seen := map[uint64]bool{}
	for _, id := range p.Members {
		if id == 0 || id > 255 || seen[id] {
			return Plan{}, fmt.Errorf("follow: the cut-over plan's members %v are not distinct server ids (1-255)", p.Members)
		}
		seen[id] = true
	}
	if len(p.Token) < minTokenLen {
		return Plan{}, fmt.Errorf("follow: the cut-over plan's token has %d characters, fewer than %d", len(p.Token), minTokenLen)
	}
	return p, nil
}

// Marshal is the marker's data for p.
func (p Plan) Marshal() []byte {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // a struct of a slice of numbers and a string
	}
	return b
}

// A CutOver is what a follower became at the cut-over: a member of the
// Collie ensemble whose data directory starts at Zxid, the marker's.
type CutOver struct {
	Zxid    int64
	Members []uint64
	// Config is the configuration the server runs with as a member: the
	// follower's, with only the members' server lines, each a voter.
	Config config.Config
}

// recordName is the file in the data directory that says the server was
// cut over: written after the data directory is, so a server that finds
// it runs as a member of the Collie ensemble, however often it restarts.
const recordName = "zookeeper-cutover.json"

type record struct {
	Zxid    int64     `json:"zxid"`
	Members []uint64  `json:"members"`
	Time    time.Time `json:"time"`
}

// LoadCutOver returns what cfg's server became at an earlier cut-over, or
// nil when it has not been cut over.
func LoadCutOver(cfg config.Config) (*CutOver, error) {
	path := filepath.Join(cfg.DataDir, recordName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("follow: %w", err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("follow: %s: %w", path, err)
	}
	mc, err := memberConfig(cfg, r.Members)
	if err != nil {
		return nil, fmt.Errorf("follow: %s: %w", path, err)
	}
	return &CutOver{Zxid: r.Zxid, Members: r.Members, Config: mc}, nil
}

// checkDataDir makes sure, at the start, that a cut-over will be able to
// write the data directory.
func checkDataDir(cfg config.Config) error {
	if _, err := os.Stat(filepath.Join(cfg.DataDir, recordName)); err == nil {
		return fmt.Errorf("follow: %s says this server was cut over from ZooKeeper: it runs as a member of the Collie ensemble, not as a follower", filepath.Join(cfg.DataDir, recordName))
	}
	if err := datadir.CheckSeedTarget(cfg.DataDir, cfg.DataLogDir); err != nil {
		if errors.Is(err, datadir.ErrTargetNotEmpty) {
			return fmt.Errorf("follow: %w; a follower writes its data directory at the cut-over, into an empty one (a cut-over that stopped before it finished leaves one behind: remove it, and the follower takes the data from ZooKeeper again)", err)
		}
		return fmt.Errorf("follow: %w", err)
	}
	return nil
}

// memberConfig is cfg as a member of the Collie ensemble of members: their
// server lines, each a voter, and no other.
func memberConfig(cfg config.Config, members []uint64) (config.Config, error) {
	if !slices.Contains(members, cfg.ServerID) {
		return config.Config{}, fmt.Errorf("server %d is not among the members %s of the Collie ensemble", cfg.ServerID, idList(members))
	}
	var servers []config.Server
	for _, id := range members {
		i := slices.IndexFunc(cfg.Servers, func(s config.Server) bool { return s.ID == id })
		if i < 0 {
			return config.Config{}, fmt.Errorf("the configuration has no server.%d line for member %d of the Collie ensemble", id, id)
		}
		s := cfg.Servers[i]
		s.Observer = false
		servers = append(servers, s)
	}
	mc := cfg
	mc.Servers = servers
	mc.Standalone = false
	return mc, nil
}

func idList(ids []uint64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(s, ",")
}

// joinAsMember says how a follower that missed the cut-over joins the
// Collie ensemble all the same.
const joinAsMember = "If this server is a member, start it as one instead: with an empty data directory, a zoo.cfg whose server.N lines are the members' (each a voter, without :observer), and without -follow-zookeeper; it takes the data from the Collie ensemble's leader"

// errPastMarker stops a follower whose leader sends a snapshot that holds
// the cut-over marker.
var errPastMarker = errors.New("follow: the ZooKeeper ensemble is past the cut-over marker")

// pastMarker refuses a snapshot of the leader's that holds a cut-over
// plan: the follower would go on from beyond the marker, where it can
// neither become a member (the members start at the marker's zxid) nor
// serve (what it acknowledged would not be in Collie).
func pastMarker(f *fsm.FSM, zxid int64) error {
	n, ok := f.Tree().Get(MarkerPath)
	if !ok {
		return nil
	}
	if _, err := ParsePlan(n.Data); err != nil {
		return nil
	}
	return fmt.Errorf("%w: it was written at zxid %s, and the leader's snapshot is at %s; this follower did not meet it as it was committed, so it cannot start the Collie ensemble from there. %s; or, if the cut-over is to be made again, delete %s through ZooKeeper", errPastMarker, zxidString(n.Czxid), zxidString(zxid), joinAsMember, MarkerPath)
}

// pendingCutOver is the marker the follow loop met.
type pendingCutOver struct {
	plan   Plan
	zxid   int64
	digest *zkdata.TxnDigest
}

// errCutOverNow ends the follow loop at the marker.
var errCutOverNow = errors.New("follow: cut over")

// markerAt returns the marker txn zxid created, if it did. Called with mu
// held, right after the txn is applied.
func (s *Server) markerAt(txn *zkdata.Txn) (*pendingCutOver, bool) {
	n, ok := s.fsm.Tree().Get(MarkerPath)
	if !ok || n.Czxid != txn.Zxid {
		return nil, false
	}
	plan, err := ParsePlan(n.Data)
	if err != nil {
		s.log.Warn("a node at the cut-over marker's path holds no cut-over plan; following on", "path", MarkerPath, "zxid", zxidString(txn.Zxid), "err", err)
		return nil, false
	}
	return &pendingCutOver{plan: plan, zxid: txn.Zxid, digest: txn.Digest}, true
}

// writeCutOver makes this server's data directory a member's of the Collie
// ensemble at the marker. Called once the follow loop and every client
// connection have ended, so the state is this goroutine's alone.
func (s *Server) writeCutOver(p *pendingCutOver) (*CutOver, error) {
	at := zxidString(p.zxid)
	mc, err := memberConfig(s.cfg, p.plan.Members)
	if err != nil {
		return nil, fmt.Errorf("follow: the cut-over at zxid %s: %w; this server stops, since writes ZooKeeper takes after the cut-over are not in Collie", at, err)
	}
	digest := s.fsm.Tree().Digest()
	checked := "not sent by ZooKeeper (zookeeper.digest.enabled=false)"
	if p.digest != nil && p.digest.Version == tree.DigestVersion {
		if p.digest.TreeDigest != digest {
			return nil, fmt.Errorf("follow: the cut-over at zxid %s: this copy's tree digest is %d, ZooKeeper's %d: the copy differs from ZooKeeper's tree, so it does not become a member. %s", at, digest, p.digest.TreeDigest, joinAsMember)
		}
		checked = "matches ZooKeeper's"
	}
	if err := s.fsm.Reidentify(cutOverSecret(p.plan.Token, p.zxid, digest)); err != nil {
		return nil, fmt.Errorf("follow: %w", err)
	}
	start := time.Now()
	_, err = datadir.Seed(datadir.SeedConfig{
		DataDir: s.cfg.DataDir, LogDir: s.cfg.DataLogDir, ID: s.cfg.ServerID,
		Voters: p.plan.Members, Options: s.fsmOpts, Index: uint64(p.zxid),
		WriteState: s.fsm.Save, SegmentBytes: s.cfg.PreAllocSize,
		// The member starts on it at once, which reads it back; the
		// clients wait meanwhile.
		NoReadBack: true,
	})
	if err != nil {
		return nil, fmt.Errorf("follow: the cut-over at zxid %s: %w", at, err)
	}
	if err := writeRecord(s.cfg.DataDir, record{Zxid: p.zxid, Members: p.plan.Members, Time: time.Now().UTC()}); err != nil {
		return nil, fmt.Errorf("follow: the cut-over at zxid %s: %w", at, err)
	}
	s.log.Info("cut over from ZooKeeper: the data directory starts the Collie ensemble",
		"zxid", at, "members", idList(p.plan.Members), "digest", checked, "nodes", s.fsm.Tree().Len(), "sessions", len(s.fsm.Sessions()),
		"ensemble", fmt.Sprintf("%016x", s.fsm.EnsembleID()), "took", time.Since(start).Round(time.Millisecond))
	return &CutOver{Zxid: p.zxid, Members: p.plan.Members, Config: mc}, nil
}

// cutOverSecret is the Collie ensemble's session secret: the same for
// every member, since each has the plan's token and the same tree at the
// same zxid, and a different one for a member whose tree differs, which
// the others then refuse as another ensemble's.
func cutOverSecret(token string, zxid, digest int64) []byte {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("collie cutover\x00"))
	var num [16]byte
	binary.BigEndian.PutUint64(num[:8], uint64(zxid))
	binary.BigEndian.PutUint64(num[8:], uint64(digest))
	mac.Write(num[:])
	return mac.Sum(nil)[:fsm.SecretLen]
}

// writeRecord writes the record whole or not at all.
func writeRecord(dataDir string, r record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dataDir, recordName)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(append(b, '\n')); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(dataDir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
