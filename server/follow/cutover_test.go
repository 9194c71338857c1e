package follow_test

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/internal/zkwire"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server"
	"github.com/collie-io/collie/server/follow"
	"github.com/collie-io/collie/server/tree"
)

func TestParsePlan(t *testing.T) {
	token := strings.Repeat("t", 32)
	good := follow.Plan{Members: []uint64{4, 5, 6}, Token: token}
	if p, err := follow.ParsePlan(good.Marshal()); err != nil || !slices.Equal(p.Members, good.Members) || p.Token != token {
		t.Errorf("ParsePlan(Marshal(%v)) = %v, %v", good, p, err)
	}
	for name, data := range map[string]string{
		"not JSON":      "hello",
		"no member":     `{"members":[],"token":"` + token + `"}`,
		"server 0":      `{"members":[0,4],"token":"` + token + `"}`,
		"server 256":    `{"members":[256],"token":"` + token + `"}`,
		"twice":         `{"members":[4,4],"token":"` + token + `"}`,
		"short token":   `{"members":[4],"token":"short"}`,
		"no token":      `{"members":[4]}`,
		"negative id":   `{"members":[-1],"token":"` + token + `"}`,
		"members not a": `{"members":"4","token":"` + token + `"}`,
	} {
		if p, err := follow.ParsePlan([]byte(data)); err == nil {
			t.Errorf("%s: ParsePlan(%s) = %v, want an error", name, data, p)
		}
	}
}

// createMarker creates the cut-over marker with data through a client of
// the ensemble and returns its zxid.
func createMarker(t *testing.T, c *zk.Conn, data []byte) int64 {
	t.Helper()
	if _, err := c.Create(follow.MarkerPath, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Exists(follow.MarkerPath)
	if err != nil {
		t.Fatal(err)
	}
	return st.Czxid
}

// awaitRun waits for what a follower's Run returns.
func awaitRun(t *testing.T, ran <-chan error) error {
	t.Helper()
	select {
	case err := <-ran:
		return err
	case <-time.After(waitTimeout):
		t.Fatal("the follower goes on past the marker")
		return nil
	}
}

// TestCutOver: a follower goes on past a node at the marker's path that
// holds no plan; one that is not among a plan's members stops at the
// marker, writing nothing; a member stops there too, and writes a data
// directory that a Collie server starts from with the ensemble's tree
// and sessions, which a follower does not start on again.
func TestCutOver(t *testing.T) {
	e := startEnsemble(t)
	zkc := zkClient(t, e)
	token := strings.Repeat("k", 40)

	t.Run("not a plan", func(t *testing.T) {
		addr := startFollower(t, e)
		createMarker(t, zkc, []byte("a node of the application"))
		if _, err := zkc.Create("/after-marker", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		_, st, err := zkc.Exists("/after-marker")
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(waitTimeout); srvrZxid(addr) < st.Czxid; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the follower stopped at %#x, before %#x", srvrZxid(addr), st.Czxid)
			}
		}
		for _, p := range []string{follow.MarkerPath, "/after-marker"} {
			if err := zkc.Delete(p, -1); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("not a member", func(t *testing.T) {
		f, ran, _ := runFollower(t, e)
		c := global(t, f.Addr().String(), 30000)
		createMarker(t, zkc, follow.Plan{Members: []uint64{observerID + 1}, Token: token}.Marshal())
		err := awaitRun(t, ran)
		if err == nil || !strings.Contains(err.Error(), "not among the members") || f.CutOver() != nil {
			t.Errorf("Run of a follower that is not a member: %v, cut over to %v", err, f.CutOver())
		}
		if _, err := c.ExpectClosed(); err != nil {
			t.Errorf("a client's connection stays open: %v", err)
		}
		if err := zkc.Delete(follow.MarkerPath, -1); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("member", func(t *testing.T) {
		f, ran, _ := runFollower(t, e)
		c := global(t, f.Addr().String(), 30000)
		mustCreate(t, c, "/owned", proto.ModeEphemeral)
		zxid := createMarker(t, zkc, follow.Plan{Members: []uint64{observerID}, Token: token}.Marshal())
		if err := awaitRun(t, ran); err != nil {
			t.Fatalf("Run of a member: %v", err)
		}
		co := f.CutOver()
		if co == nil || co.Zxid != zxid || !slices.Equal(co.Members, []uint64{observerID}) {
			t.Fatalf("cut over to %+v, want zxid %#x and member %d", co, zxid, observerID)
		}
		if len(co.Config.Servers) != 1 || co.Config.Servers[0].ID != observerID || co.Config.Servers[0].Observer || co.Config.Standalone {
			t.Errorf("the member's servers: %+v, want server.%d alone, a voter of an ensemble", co.Config.Servers, observerID)
		}
		if again, err := follow.LoadCutOver(co.Config); err != nil || again == nil || again.Zxid != zxid {
			t.Errorf("LoadCutOver: %+v, %v", again, err)
		}
		if _, err := follow.New(co.Config, follow.Options{}); err == nil || !strings.Contains(err.Error(), "cut over") {
			t.Errorf("a follower started on the data directory: %v, want it refused", err)
		}

		// The data directory as the server starts from it.
		cfg := co.Config
		cfg.ClientPort, cfg.AdminServerEnabled = freePort(t), false
		srv, err := server.New(cfg, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan error, 1)
		go func() { stopped <- srv.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			<-stopped
			srv.Shutdown(context.Background())
		})
		select {
		case <-srv.Ready():
		case <-time.After(waitTimeout):
			t.Fatal("the cut-over server does not serve")
		}
		addr := srv.Addr().String()

		want := superTree(t, awaitLeader(t, e))
		got := superTree(t, addr)
		if d := zkwire.DiffTrees(want, got); d != "" {
			t.Errorf("the Collie server's tree and ZooKeeper's at the marker: %s", d)
		}
		n, err := c.Resume(addr, 0)
		if err != nil || n.TimeOut == 0 {
			t.Fatalf("the session resumed on the Collie server: %v", err)
		}
		defer n.Close()
		if code, err := n.Do(proto.OpSetData, &proto.SetDataRequest{Path: "/owned", Data: []byte("mine"), Version: 0}, nil); err != nil || code != proto.OK {
			t.Errorf("setData of the session's ephemeral on the Collie server: %v %v", code, err)
		}
		if srvrZxid(addr) <= zxid {
			t.Errorf("the Collie server's zxid %#x is not past the marker's %#x", srvrZxid(addr), zxid)
		}
	})
}

// freePort is a TCP port on 127.0.0.1 that nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// superTree reads the whole tree of the server at addr as the super user,
// but for /zookeeper/config.
func superTree(t *testing.T, addr string) map[string]string {
	t.Helper()
	c, err := zkwire.Dial(addr, 30000)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	authSuper(t, c)
	nodes, err := c.Tree(tree.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}
