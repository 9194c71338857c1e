package discovery_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/discovery"
	"github.com/collie-io/collie/recipe/internal/recipetest"
)

// TestDiscovery runs every scenario against Collie, and against the real
// ZooKeeper 3.8 to show that the expectations are ZooKeeper's.
func TestDiscovery(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T, addr string)
	}{
		{"register-query", testRegisterQuery},
		{"reregister-after-expiry", testReregisterAfterExpiry},
		{"cache-and-provider", testCacheAndProvider},
		{"group", testGroup},
		{"curator", testCurator},
	}
	for _, srv := range recipetest.Servers {
		t.Run("server="+srv.Name, func(t *testing.T) {
			addr := srv.Start(t)
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) { sc.run(t, addr) })
			}
		})
	}
}

func instance(name, id string, port int) discovery.Instance {
	return discovery.Instance{Name: name, ID: id, Address: "10.0.0." + id, Port: discovery.Port(port),
		URISpec: discovery.ParseURISpec("{scheme}://{address}:{port}/api")}
}

func ids(insts []discovery.Instance) []string {
	var out []string
	for _, i := range insts {
		out = append(out, i.ID)
	}
	return out
}

func testRegisterQuery(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	owner := recipetest.Dial(t, addr, client.Config{})
	d := discovery.New(owner, "/rq")
	t.Cleanup(d.Close)
	for _, inst := range []discovery.Instance{instance("web", "1", 80), instance("web", "2", 81), instance("db", "3", 5432)} {
		if err := d.Register(ctx, inst); err != nil {
			t.Fatal(err)
		}
	}
	perm := instance("web", "9", 99)
	perm.ServiceType = discovery.Permanent
	if err := d.Register(ctx, perm); err != nil {
		t.Fatal(err)
	}
	reader := discovery.New(recipetest.Dial(t, addr, client.Config{}), "/rq")
	t.Cleanup(reader.Close)
	if names, err := reader.Names(ctx); err != nil || !slices.Equal(names, []string{"db", "web"}) {
		t.Fatalf("Names = %v, %v", names, err)
	}
	web, err := reader.Instances(ctx, "web")
	if err != nil || !slices.Equal(ids(web), []string{"1", "2", "9"}) {
		t.Fatalf("Instances(web) = %v, %v", ids(web), err)
	}
	if got := web[0].URI(nil); got != "http://10.0.0.1:80/api" {
		t.Errorf("URI = %q", got)
	}
	if web[0].ServiceType != discovery.Dynamic || web[0].RegistrationTimeUTC == 0 || !web[0].IsEnabled() {
		t.Errorf("instance as read: %+v", web[0])
	}
	moved := instance("web", "1", 8080)
	if err := d.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if got, err := reader.Instance(ctx, "web", "1"); err != nil || *got.Port != 8080 {
		t.Fatalf("Instance after Update: %+v, %v", got, err)
	}
	if err := d.Unregister(ctx, "web", "2"); err != nil {
		t.Fatal(err)
	}
	// Dynamic instances go with their session; permanent ones stay.
	owner.Close()
	recipetest.WaitFor(t, "the dynamic instances to go with their session", func() bool {
		web, err := reader.Instances(ctx, "web")
		return err == nil && slices.Equal(ids(web), []string{"9"})
	})
}

func testReregisterAfterExpiry(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	cl, part := recipetest.Partitioned(t, addr, recipetest.ShortSession)
	d := discovery.New(cl, "/expiry")
	t.Cleanup(d.Close)
	if err := d.Register(ctx, instance("svc", "1", 1)); err != nil {
		t.Fatal(err)
	}
	m, err := discovery.Join(ctx, cl, "/expiry-group", "m1", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	states := cl.StateChanges()
	defer states.Close()
	reader := discovery.New(recipetest.Dial(t, addr, client.Config{}), "/expiry")
	t.Cleanup(reader.Close)
	part.Cut()
	for recipetest.Receive(t, states.Events()) != client.StateExpired {
	}
	recipetest.WaitFor(t, "the expired session's instance to go", func() bool {
		got, err := reader.Instances(ctx, "svc")
		return err == nil && len(got) == 0
	})
	part.Heal()
	recipetest.WaitFor(t, "the instance to be registered again", func() bool {
		got, err := reader.Instances(ctx, "svc")
		return err == nil && slices.Equal(ids(got), []string{"1"})
	})
	other := recipetest.Dial(t, addr, client.Config{})
	recipetest.WaitFor(t, "the member to join again", func() bool {
		data, _, err := other.Get(ctx, m.Path())
		return err == nil && string(data) == "hello"
	})
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := other.Exists(ctx, m.Path()); ok {
		t.Error("the member's node is there after Leave")
	}
}

func testCacheAndProvider(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	d := discovery.New(recipetest.Dial(t, addr, client.Config{}), "/cp")
	t.Cleanup(d.Close)
	sc, err := discovery.New(recipetest.Dial(t, addr, client.Config{}), "/cp").Cache(ctx, "api")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Close)
	p := discovery.NewProvider(sc, discovery.RoundRobin)
	if _, err := p.Instance(); err != discovery.ErrNoInstance {
		t.Fatalf("Instance of no service: %v", err)
	}
	for _, id := range []string{"1", "2", "3"} {
		if err := d.Register(ctx, instance("api", id, 1)); err != nil {
			t.Fatal(err)
		}
	}
	recipetest.WaitFor(t, "the cache to list three instances", func() bool { return len(sc.Instances()) == 3 })
	var got []string
	for range 6 {
		inst, err := p.Instance()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, inst.ID)
	}
	if strings.Join(got, "") != "123123" {
		t.Errorf("round robin: %v", got)
	}
	off := instance("api", "2", 1)
	off.Enabled = new(bool)
	if err := d.Update(ctx, off); err != nil {
		t.Fatal(err)
	}
	if err := d.Unregister(ctx, "api", "3"); err != nil {
		t.Fatal(err)
	}
	recipetest.WaitFor(t, "the cache to follow", func() bool {
		insts := sc.Instances()
		return len(insts) == 2 && !insts[1].IsEnabled()
	})
	random := discovery.NewProvider(sc, discovery.Random)
	for range 10 {
		if inst, err := random.Instance(); err != nil || inst.ID != "1" {
			t.Fatalf("random among the enabled: %v, %v", inst.ID, err)
		}
	}
}

func testGroup(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	g, err := discovery.WatchGroup(ctx, recipetest.Dial(t, addr, client.Config{}), "/group")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	a := recipetest.Dial(t, addr, client.Config{})
	if _, err := discovery.Join(ctx, a, "/group", "a", []byte("A")); err != nil {
		t.Fatal(err)
	}
	b, err := discovery.Join(ctx, recipetest.Dial(t, addr, client.Config{}), "/group", "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	recipetest.WaitFor(t, "both members listed", func() bool { return slices.Equal(g.Names(), []string{"a", "b"}) })
	if m := g.Members(); string(m[0].Data) != "A" {
		t.Errorf("member a's data: %q", m[0].Data)
	}
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	a.Close()
	recipetest.WaitFor(t, "the list to empty", func() bool { return len(g.Names()) == 0 })
}

// testCurator registers an instance with Curator's ServiceDiscovery and
// finds it from Go with every field, and the other way round.
func testCurator(t *testing.T, addr string) {
	ctx := recipetest.Context(t)
	peer := recipetest.Java{Program: "DiscoveryPeer.java", Args: []string{addr, "/curator"}}.Start(t)
	peer.Expect(t, "register web j1 10.1.1.1 8443 zone=eu", "ok")
	d := discovery.New(recipetest.Dial(t, addr, client.Config{}), "/curator")
	t.Cleanup(d.Close)
	got, err := d.Instance(ctx, "web", "j1")
	if err != nil {
		t.Fatal(err)
	}
	var payload map[string]string
	if err := json.Unmarshal(got.Payload, &payload); err != nil || payload["zone"] != "eu" || payload["@class"] != "java.util.LinkedHashMap" {
		t.Errorf("payload of Curator's instance: %s (%v)", got.Payload, err)
	}
	if got.Name != "web" || got.Address != "10.1.1.1" || *got.Port != 8443 || got.SSLPort != nil ||
		got.ServiceType != discovery.Dynamic || got.RegistrationTimeUTC == 0 || !got.IsEnabled() ||
		got.URI(nil) != "http://10.1.1.1:8443/api" {
		t.Errorf("Curator's instance as read: %+v, URI %q", got, got.URI(nil))
	}

	payloadJSON, err := discovery.JavaPayload("java.util.LinkedHashMap", map[string]string{"zone": "us"})
	if err != nil {
		t.Fatal(err)
	}
	mine := instance("web", "g1", 9090)
	mine.Address = "10.2.2.2"
	mine.Payload = payloadJSON
	if err := d.Register(ctx, mine); err != nil {
		t.Fatal(err)
	}
	peer.Expect(t, "names", "web")
	peer.Expect(t, "query web", "g1,10.2.2.2,9090,null,DYNAMIC,true,{zone=us},http://10.2.2.2:9090/api;"+
		"j1,10.1.1.1,8443,null,DYNAMIC,true,{zone=eu},http://10.1.1.1:8443/api")
	peer.Expect(t, "unregister web j1", "ok")
	recipetest.WaitFor(t, "Curator's unregistration", func() bool {
		insts, err := d.Instances(ctx, "web")
		return err == nil && slices.Equal(ids(insts), []string{"g1"})
	})
}
