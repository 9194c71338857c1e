package discovery_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/discovery"
	rt "github.com/collie-io/collie/recipe/internal/recipetest"
)

// TestDiscovery runs every scenario against Collie and the real ZooKeeper
// 3.8, each on paths of its own.
func TestDiscovery(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T, addr string)
	}{
		{"group/join-leave", testJoinLeave},
		{"group/expiry", testGroupExpiry},
		{"group/quick-return", testQuickReturn},
		{"group/old-session-node", testOldSessionNode},
		{"group/deleted-node", testMemberDeleted},
		{"group/replace", testMemberReplaces},
		{"services/register-query", testRegisterQuery},
		{"services/lifetimes", testLifetimes},
		{"services/sequential", testSequential},
		{"services/expiry", testDiscoveryExpiry},
		{"services/cache", testCache},
		{"services/cache-reconnect", testCacheReconnect},
		{"services/provider", testProvider},
		{"curator", testCuratorInterop},
	}
	for _, srv := range rt.Servers {
		t.Run("server="+srv.Name, func(t *testing.T) {
			addr := srv.Start(t)
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) { sc.run(t, addr) })
			}
		})
	}
}

// instance returns an instance of name with every field set.
func instance(t *testing.T, name, id string, port int) discovery.Instance {
	t.Helper()
	payload, err := discovery.JavaPayload("com.example.Details", map[string]string{"zone": "eu-" + id})
	if err != nil {
		t.Fatal(err)
	}
	return discovery.Instance{
		Name: name, ID: id, Address: "10.0.0." + id, Port: new(port), SSLPort: new(port + 1),
		Payload: payload, RegistrationTimeUTC: 1700000000000, ServiceType: discovery.Dynamic,
		URISpec: discovery.MustParseURISpec("{scheme}://{address}:{ssl-port}/" + name),
	}
}

// ids returns the instances' ids, in order.
func ids(all []discovery.Instance) string {
	var out []string
	for _, i := range all {
		out = append(out, i.ID)
	}
	return strings.Join(out, ",")
}

// awaitInstances receives lists from sc until one has the ids want.
func awaitInstances(t *testing.T, sc *discovery.ServiceCache, want string) []discovery.Instance {
	t.Helper()
	for {
		if all := rt.Receive(t, sc.Updates()); ids(all) == want {
			return all
		}
	}
}

// Instances registered by one client are found by another with every
// field as registered; updates and unregistrations show.
func testRegisterQuery(t *testing.T, addr string) {
	ctx := rt.Context(t)
	d := discovery.New(rt.Dial(t, addr, client.Config{}), "/rq/services")
	atEnd(t, d.Close)
	rc := rt.Dial(t, addr, client.Config{})
	web1, web2, db := instance(t, "web", "1", 80), instance(t, "web", "2", 81), instance(t, "db", "3", 5432)
	db.ServiceType = discovery.Static
	for _, inst := range []discovery.Instance{web1, web2, db} {
		if err := d.Register(ctx, inst); err != nil {
			t.Fatal(err)
		}
	}
	reader := discovery.New(rc, "/rq/services")
	if names, err := reader.Names(ctx); err != nil || strings.Join(names, ",") != "db,web" {
		t.Fatalf("Names = %v, %v", names, err)
	}
	web, err := reader.Instances(ctx, "web")
	if err != nil || !reflect.DeepEqual(web, []discovery.Instance{web1, web2}) {
		t.Fatalf("Instances(web) = %+v, %v\nwant %+v", web, err, []discovery.Instance{web1, web2})
	}
	if got, ok, err := reader.Instance(ctx, "db", "3"); err != nil || !ok || !reflect.DeepEqual(got, db) {
		t.Errorf("Instance(db, 3) = %+v, %v, %v", got, ok, err)
	}
	if got := web[0].URI(nil); got != "https://10.0.0.1:81/web" {
		t.Errorf("URI = %q", got)
	}
	if _, ok, err := reader.Instance(ctx, "web", "9"); ok || err != nil {
		t.Errorf("Instance of no node: %v, %v", ok, err)
	}
	if names, err := discovery.New(rc, "/nothing").Names(ctx); err != nil || len(names) != 0 {
		t.Errorf("Names under no node: %v, %v", names, err)
	}

	// Defaults are filled in; an update keeps the registration time.
	if err := d.Register(ctx, discovery.Instance{Name: "bare", ID: "b"}); err != nil {
		t.Fatal(err)
	}
	bare, _, err := reader.Instance(ctx, "bare", "b")
	if err != nil || bare.ServiceType != discovery.Dynamic || time.Since(time.UnixMilli(bare.RegistrationTimeUTC)) > time.Minute {
		t.Errorf("instance registered with defaults: %+v, %v", bare, err)
	}
	moved := web1
	moved.Port, moved.Disabled, moved.RegistrationTimeUTC = new(8080), true, 0
	if err := d.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	moved.RegistrationTimeUTC = web1.RegistrationTimeUTC
	if got, _, err := reader.Instance(ctx, "web", "1"); err != nil || !reflect.DeepEqual(got, moved) {
		t.Errorf("after Update: %+v, %v\nwant %+v", got, err, moved)
	}
	if err := reader.Update(ctx, web2); !errors.Is(err, discovery.ErrNotRegistered) {
		t.Errorf("Update of an instance registered elsewhere: %v", err)
	}
	web2.ServiceType = discovery.Static
	if err := d.Update(ctx, web2); err == nil {
		t.Error("Update changed the service type")
	}
	for _, bad := range []discovery.Instance{{Name: "a/b", ID: "1"}, {Name: "web", ID: ""}, {Name: "web", ID: "x", ServiceType: "ODD"}} {
		if err := d.Register(ctx, bad); err == nil {
			t.Errorf("Register(%+v) succeeded", bad)
		}
	}

	if err := d.Unregister(ctx, "web", "2"); err != nil {
		t.Fatal(err)
	}
	if err := d.Unregister(ctx, "web", "never"); err != nil {
		t.Errorf("Unregister of an unknown instance: %v", err)
	}
	if web, err := reader.Instances(ctx, "web"); err != nil || ids(web) != "1" {
		t.Errorf("after Unregister: %s, %v", ids(web), err)
	}
}

// Dynamic instances go with their session, Static and Permanent ones stay;
// Close unregisters all of a Discovery's instances.
func testLifetimes(t *testing.T, addr string) {
	ctx := rt.Context(t)
	owner := rt.Dial(t, addr, client.Config{})
	d := discovery.New(owner, "/lifetimes")
	dynamic, static, permanent := instance(t, "svc", "1", 1), instance(t, "svc", "2", 2), instance(t, "svc", "3", 3)
	static.ServiceType, permanent.ServiceType = discovery.Static, discovery.Permanent
	for _, inst := range []discovery.Instance{dynamic, static, permanent} {
		if err := d.Register(ctx, inst); err != nil {
			t.Fatal(err)
		}
	}
	rc := rt.Dial(t, addr, client.Config{})
	reader := discovery.New(rc, "/lifetimes")
	for id, want := range map[string]int64{"1": owner.SessionID(), "2": 0, "3": 0} {
		if _, st, err := rc.Get(ctx, "/lifetimes/svc/"+id); err != nil || st.EphemeralOwner != want {
			t.Errorf("node of instance %s: owner %#x, %v; want %#x", id, st.EphemeralOwner, err, want)
		}
	}
	owner.Close()
	rt.WaitFor(t, "the dynamic instance to go with its session", func() bool {
		all, err := reader.Instances(ctx, "svc")
		return err == nil && ids(all) == "2,3"
	})

	other := discovery.New(rt.Dial(t, addr, client.Config{}), "/lifetimes")
	for _, inst := range []discovery.Instance{instance(t, "svc", "4", 4), static} {
		inst.ServiceType = discovery.Static
		if err := other.Register(ctx, inst); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if all, err := reader.Instances(ctx, "svc"); err != nil || ids(all) != "3" {
		t.Errorf("after Close: %s, %v", ids(all), err)
	}
	if err := other.Register(ctx, dynamic); !errors.Is(err, discovery.ErrClosed) {
		t.Errorf("Register after Close: %v", err)
	}
}

// A DynamicSequential instance's node is named by its id and a sequence
// number, as Curator names it.
func testSequential(t *testing.T, addr string) {
	ctx := rt.Context(t)
	c := rt.Dial(t, addr, client.Config{})
	d := discovery.New(c, "/sequential")
	atEnd(t, d.Close)
	inst := instance(t, "svc", "seq-", 1)
	inst.ServiceType = discovery.DynamicSequential
	if err := d.Register(ctx, inst); err != nil {
		t.Fatal(err)
	}
	nodes := rt.Children(t, c, "/sequential/svc")
	if len(nodes) != 1 || !strings.HasPrefix(nodes[0], "seq-") || rt.Sequence(t, nodes[0]) < 0 {
		t.Fatalf("nodes %v", nodes)
	}
	if all, err := d.Instances(ctx, "svc"); err != nil || !reflect.DeepEqual(all, []discovery.Instance{inst}) {
		t.Errorf("Instances = %+v, %v", all, err)
	}
	if _, ok, err := d.Instance(ctx, "svc", "seq-"); ok || err != nil {
		t.Errorf("Instance by id found a sequential node: %v, %v", ok, err)
	}
	if err := d.Unregister(ctx, "svc", "seq-"); err != nil {
		t.Fatal(err)
	}
	if nodes := rt.Children(t, c, "/sequential/svc"); len(nodes) != 0 {
		t.Errorf("nodes after Unregister: %v", nodes)
	}
}

// An instance whose session expires is registered again once its client
// has a new session.
func testDiscoveryExpiry(t *testing.T, addr string) {
	ctx := rt.Context(t)
	c, part := rt.Partitioned(t, addr, rt.ShortSession)
	d := discovery.New(c, "/expiry-services")
	atEnd(t, d.Close)
	inst := instance(t, "svc", "1", 1)
	if err := d.Register(ctx, inst); err != nil {
		t.Fatal(err)
	}
	sc, err := discovery.New(rt.Dial(t, addr, client.Config{}), "/expiry-services").Cache(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Close)
	awaitInstances(t, sc, "1")
	cut(t, c, part, client.StateExpired)
	awaitInstances(t, sc, "")
	part.Heal()
	if got := awaitInstances(t, sc, "1"); !reflect.DeepEqual(got[0], inst) {
		t.Errorf("registered again as %+v, want %+v", got[0], inst)
	}
	if _, st, err := c.Get(ctx, "/expiry-services/svc/1"); err != nil || st.EphemeralOwner != c.SessionID() {
		t.Errorf("node after expiry: %+v, %v; want ephemeral of session %#x", st, err, c.SessionID())
	}
}

// A cache follows registrations, updates and unregistrations, starting
// before the service exists, and leaves out nodes that are not instances.
func testCache(t *testing.T, addr string) {
	ctx := rt.Context(t)
	c := rt.Dial(t, addr, client.Config{})
	d := discovery.New(c, "/cache")
	atEnd(t, d.Close)
	reader := discovery.New(rt.Dial(t, addr, client.Config{}), "/cache")
	sc, err := reader.Cache(ctx, "api")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Close)
	awaitInstances(t, sc, "")
	for _, id := range []string{"1", "2", "3"} {
		if err := d.Register(ctx, instance(t, "api", id, 1)); err != nil {
			t.Fatal(err)
		}
	}
	awaitInstances(t, sc, "1,2,3")
	if _, _, err := c.Create(ctx, "/cache/api/junk", []byte("not json"), client.ModeEphemeral, nil); err != nil {
		t.Fatal(err)
	}
	changed := instance(t, "api", "2", 1)
	changed.Payload = json.RawMessage(`{"@class":"com.example.Details","zone":"us"}`)
	if err := d.Update(ctx, changed); err != nil {
		t.Fatal(err)
	}
	for {
		all := rt.Receive(t, sc.Updates())
		if ids(all) == "1,2,3" && reflect.DeepEqual(all[1], changed) {
			break
		}
	}
	if err := d.Unregister(ctx, "api", "1"); err != nil {
		t.Fatal(err)
	}
	awaitInstances(t, sc, "2,3")
	if got := ids(sc.Instances()); got != "2,3" {
		t.Errorf("Instances() = %s", got)
	}
	sc.Close()
	drained := make(chan struct{})
	go func() {
		for range sc.Updates() {
		}
		close(drained)
	}()
	rt.Receive(t, drained) // the channel is closed
}

// A cache whose connection breaks catches up with what changed meanwhile
// once its session is back.
func testCacheReconnect(t *testing.T, addr string) {
	ctx := rt.Context(t)
	d := discovery.New(rt.Dial(t, addr, client.Config{}), "/cache-reconnect")
	atEnd(t, d.Close)
	if err := d.Register(ctx, instance(t, "api", "1", 1)); err != nil {
		t.Fatal(err)
	}
	c, part := rt.Partitioned(t, addr, rt.LongSession)
	sc, err := discovery.New(c, "/cache-reconnect").Cache(ctx, "api")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Close)
	awaitInstances(t, sc, "1")
	session := c.SessionID()
	cut(t, c, part, client.StateDisconnected)
	changed := instance(t, "api", "1", 1)
	changed.Disabled = true
	if err := d.Update(ctx, changed); err != nil {
		t.Fatal(err)
	}
	if err := d.Register(ctx, instance(t, "api", "2", 2)); err != nil {
		t.Fatal(err)
	}
	part.Heal()
	for {
		all := rt.Receive(t, sc.Updates())
		if ids(all) == "1,2" && all[0].Disabled {
			break
		}
	}
	if c.SessionID() != session {
		t.Errorf("the session changed: %#x, then %#x", session, c.SessionID())
	}
}

// A provider hands out the enabled instances that are not down, round
// robin or at random.
func testProvider(t *testing.T, addr string) {
	ctx := rt.Context(t)
	d := discovery.New(rt.Dial(t, addr, client.Config{}), "/provider")
	atEnd(t, d.Close)
	sc, err := discovery.New(rt.Dial(t, addr, client.Config{}), "/provider").Cache(ctx, "api")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Close)
	rr := discovery.NewProvider(sc, discovery.RoundRobin())
	if _, err := rr.Instance(); !errors.Is(err, discovery.ErrNoInstance) {
		t.Fatalf("Instance of no instances: %v", err)
	}
	for _, id := range []string{"1", "2", "3"} {
		if err := d.Register(ctx, instance(t, "api", id, 1)); err != nil {
			t.Fatal(err)
		}
	}
	awaitInstances(t, sc, "1,2,3")
	if got := pick(t, rr, 6); got != "1,2,3,1,2,3" {
		t.Errorf("round robin: %s", got)
	}

	off := instance(t, "api", "2", 1)
	off.Disabled = true
	if err := d.Update(ctx, off); err != nil {
		t.Fatal(err)
	}
	rt.WaitFor(t, "the disabled instance left out", func() bool { return ids(rr.Instances()) == "1,3" })
	random := discovery.NewProvider(sc, discovery.Random())
	seen := map[string]int{}
	for range 100 {
		inst, err := random.Instance()
		if err != nil {
			t.Fatal(err)
		}
		seen[inst.ID]++
	}
	if len(seen) != 2 || seen["1"] == 0 || seen["3"] == 0 {
		t.Errorf("random among 1 and 3: %v", seen)
	}

	// Two errors make an instance down until the policy's timeout passes.
	down := discovery.NewProvider(sc, nil, discovery.WithDownInstancePolicy(300*time.Millisecond, 2))
	one := sc.Instances()[0]
	first := time.Now()
	down.NoteError(one)
	if got := ids(down.Instances()); got != "1,3" {
		t.Errorf("after one error: %s", got)
	}
	down.NoteError(one)
	if got := ids(down.Instances()); got != "3" && time.Since(first) < 300*time.Millisecond {
		t.Errorf("after two errors: %s", got)
	}
	rt.WaitFor(t, "the down instance to come back", func() bool { return ids(down.Instances()) == "1,3" })
	if got := pick(t, down, 4); got != "1,3,1,3" {
		t.Errorf("round robin by default: %s", got)
	}
}

// pick returns the ids of n instances handed out by p.
func pick(t *testing.T, p *discovery.Provider, n int) string {
	t.Helper()
	var out []string
	for range n {
		inst, err := p.Instance()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, inst.ID)
	}
	return strings.Join(out, ",")
}
