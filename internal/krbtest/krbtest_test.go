package krbtest

import (
	"testing"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
)

// TestKDCIssuesTickets logs in with a keytab Keytab wrote and gets a
// ticket for a service, through the KDC Start ran, as clients will.
func TestKDCIssuesTickets(t *testing.T) {
	kdc := Start(t)
	service := kdc.Keytab(t, "zookeeper/localhost")
	clientKeytab := kdc.Keytab(t, "bob")
	cfg, err := config.Load(kdc.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	kt, err := keytab.Load(clientKeytab)
	if err != nil {
		t.Fatal(err)
	}
	cl := client.NewWithKeytab("bob", Realm, kt, cfg, client.DisablePAFXFAST(true))
	defer cl.Destroy()
	if err := cl.Login(); err != nil {
		t.Fatalf("login: %v\nKDC log:\n%s", err, kdc.Log())
	}
	tkt, _, err := cl.GetServiceTicket("zookeeper/localhost")
	if err != nil {
		t.Fatalf("service ticket: %v", err)
	}
	skt, err := keytab.Load(service)
	if err != nil {
		t.Fatal(err)
	}
	if err := tkt.DecryptEncPart(skt, nil); err != nil {
		t.Fatalf("the service's keytab does not open its ticket: %v", err)
	}
	if got := tkt.DecryptedEncPart.CName.PrincipalNameString(); got != "bob" {
		t.Errorf("ticket for %q, want bob", got)
	}

	// A second keytab of the same principal has new keys: the first no
	// longer logs in.
	kdc.Keytab(t, "bob")
	stale := client.NewWithKeytab("bob", Realm, kt, cfg, client.DisablePAFXFAST(true))
	defer stale.Destroy()
	if err := stale.Login(); err == nil {
		t.Error("a stale keytab logged in")
	}
}
