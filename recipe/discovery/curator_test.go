package discovery_test

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/discovery"
	rt "github.com/collie-io/collie/recipe/internal/recipetest"
)

// discoveryPeer registers and finds instances with Curator's
// ServiceDiscovery; see its class comment for the commands.
const discoveryPeer = "DiscoveryPeer.java"

// detailsClass is the Java class of the peer's payloads.
const detailsClass = "DiscoveryPeer$Details"

// details is the peer's payload class in Go.
type details struct {
	Zone   string `json:"zone"`
	Weight int    `json:"weight"`
}

// peerSpec is a URI spec that uses every variable Curator fills in, and
// the literal braces.
const peerSpec = "{scheme}://{address}:{port}/{name}/{id}?type={service-type}&since={registration-time-utc}&ssl={ssl-port}{[}x{]}{unknown}"

// testCuratorInterop runs Apache Curator 5.4's ServiceDiscovery, with its
// default serializer and a payload class of its own, in a Java process
// beside a Discovery on the same base path: each finds the other's
// instances with every field, payload and URI included, and follows the
// other's updates and unregistrations, and Curator's provider hands out
// Go's instances.
func testCuratorInterop(t *testing.T, addr string) {
	ctx := rt.Context(t)
	const base = "/interop/services"
	peer := rt.Java{Program: discoveryPeer, Args: []string{addr, base}}.Start(t)
	c := rt.Dial(t, addr, client.Config{})
	d := discovery.New(c, base)
	atEnd(t, d.Close)

	// Curator registers; Go finds the instance with every field, and its
	// cache follows Curator's update.
	peer.Expect(t, "register web j1 10.1.1.1 8080 8443 DYNAMIC eu 3 "+peerSpec, "ok")
	sc, err := d.Cache(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Close)
	j1, ok, err := d.Instance(ctx, "web", "j1")
	if err != nil || !ok {
		t.Fatalf("Curator's instance: %v, %v", ok, err)
	}
	javaView := peer.Ask(t, "instance web j1")
	want := discovery.Instance{
		Name: "web", ID: "j1", Address: "10.1.1.1", Port: new(8080), SSLPort: new(8443),
		Payload: j1.Payload, RegistrationTimeUTC: registrationTime(t, javaView),
		ServiceType: discovery.Dynamic, URISpec: discovery.MustParseURISpec(peerSpec),
	}
	if !reflect.DeepEqual(j1, want) {
		t.Errorf("Curator's instance read as %+v\nwant %+v", j1, want)
	}
	if got := describe(j1, detailsClass); got != javaView {
		t.Errorf("Go sees Curator's instance as\n%s\nCurator as\n%s", got, javaView)
	}
	if _, st, err := c.Get(ctx, base+"/web/j1"); err != nil || st.EphemeralOwner == 0 {
		t.Errorf("Curator's node: %+v, %v", st, err)
	}
	peer.Expect(t, "update web j1 us 4", "ok")
	for {
		all := rt.Receive(t, sc.Updates())
		var p details
		if len(all) == 1 && all[0].DecodePayload(&p) == nil && p == (details{"us", 4}) {
			break
		}
	}

	// Go registers; Curator finds the instances with every field.
	g1 := goInstance(t, "g1", 9090, nil, details{"ap", 5})
	g2 := goInstance(t, "g2", 9091, new(9443), details{"sa", 6})
	g2.Disabled = true
	g3 := goInstance(t, "g3", 9092, nil, details{"af", 7})
	g3.ServiceType = discovery.Static
	for _, inst := range []discovery.Instance{g1, g2, g3} {
		if err := d.Register(ctx, inst); err != nil {
			t.Fatal(err)
		}
	}
	peer.Expect(t, "names", "web")
	j1, _, err = d.Instance(ctx, "web", "j1")
	if err != nil {
		t.Fatal(err)
	}
	peer.Expect(t, "query web", strings.Join([]string{
		describe(g1, detailsClass), describe(g2, detailsClass), describe(g3, detailsClass), describe(j1, detailsClass),
	}, " ; "))
	peer.Expect(t, "instance web g2", describe(g2, detailsClass))
	ids := strings.Split(peer.Ask(t, "provider web 6"), ",")
	counts := map[string]int{}
	for _, id := range ids {
		counts[id]++
	}
	if !reflect.DeepEqual(counts, map[string]int{"j1": 2, "g1": 2, "g3": 2}) {
		t.Errorf("Curator's provider handed out %v, want each enabled instance twice", ids)
	}

	// Each side sees the other's updates and unregistrations.
	g1.Port = new(9999)
	if err := d.Update(ctx, g1); err != nil {
		t.Fatal(err)
	}
	peer.Expect(t, "instance web g1", describe(g1, detailsClass))
	if err := d.Unregister(ctx, "web", "g1"); err != nil {
		t.Fatal(err)
	}
	peer.Expect(t, "instance web g1", "none")
	peer.Expect(t, "unregister web j1", "ok")
	awaitInstances(t, sc, "g2,g3")
}

// goInstance returns an instance of the service web registered from Go,
// with a payload of the peer's class.
func goInstance(t *testing.T, id string, port int, sslPort *int, p details) discovery.Instance {
	t.Helper()
	payload, err := discovery.JavaPayload(detailsClass, p)
	if err != nil {
		t.Fatal(err)
	}
	inst := discovery.NewInstance("web")
	inst.ID, inst.Address, inst.Port, inst.SSLPort = id, "10.2.2."+id[1:], new(port), sslPort
	inst.Payload, inst.URISpec = payload, discovery.MustParseURISpec(peerSpec)
	return inst
}

// describe writes an instance as the peer describes Curator's instances,
// its payload of class class.
func describe(i discovery.Instance, class string) string {
	orNull := func(p *int) string {
		if p == nil {
			return "null"
		}
		return strconv.Itoa(*p)
	}
	payload := "null"
	var p details
	if i.Payload != nil && i.PayloadClass() == class && i.DecodePayload(&p) == nil {
		payload = fmt.Sprintf("%s:%s:%d", class, p.Zone, p.Weight)
	}
	return fmt.Sprintf("%s %s %s %s %s %v %s %d %s", i.ID, i.Address, orNull(i.Port), orNull(i.SSLPort),
		i.ServiceType, !i.Disabled, payload, i.RegistrationTimeUTC, i.URI(nil))
}

// registrationTime returns the registration time of a description of the
// peer's.
func registrationTime(t *testing.T, description string) int64 {
	t.Helper()
	f := strings.Fields(description)
	if len(f) != 9 {
		t.Fatalf("description %q", description)
	}
	ms, err := strconv.ParseInt(f[7], 10, 64)
	if err != nil {
		t.Fatalf("description %q: %v", description, err)
	}
	return ms
}
