package sasl

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/collie-io/collie/client/krb5sasl"
	"github.com/collie-io/collie/internal/gsskrb5"
	"github.com/collie-io/collie/internal/krbtest"
)

// gssRealm is a KDC with the service zookeeper/localhost and the client
// bob, and an Acceptor of the service.
type gssRealm struct {
	kdc      *krbtest.KDC
	acceptor *Acceptor
	bob      *krb5sasl.Client
}

func newGSSRealm(t *testing.T) *gssRealm {
	t.Helper()
	kdc := krbtest.Start(t)
	return &gssRealm{kdc: kdc, acceptor: newAcceptor(t, kdc.Keytab(t, "zookeeper/localhost")), bob: newKrbClient(t, kdc, "bob", krb5sasl.Config{})}
}

func newAcceptor(t *testing.T, keytabPath string) *Acceptor {
	t.Helper()
	kt, err := keytab.Load(keytabPath)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAcceptor("zookeeper/localhost@"+krbtest.Realm, kt, 5*time.Minute, time.Now, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func newKrbClient(t *testing.T, kdc *krbtest.KDC, principal string, cfg krb5sasl.Config) *krb5sasl.Client {
	t.Helper()
	cfg.Krb5Conf, cfg.Principal, cfg.Keytab = kdc.Krb5Conf, principal, kdc.Keytab(t, principal)
	cfg.NoCanonicalize = true
	cl, err := krb5sasl.NewClient(cfg)
	if err != nil {
		t.Fatalf("%v\nKDC log:\n%s", err, kdc.Log())
	}
	t.Cleanup(cl.Close)
	return cl
}

// exchange runs a client mechanism against a server exchange until one
// fails or both complete, and returns the tokens the client sent.
func exchange(t *testing.T, m *krb5sasl.Mechanism, g *GSSAPI, host string) ([][]byte, error) {
	t.Helper()
	token, err := m.Start(host)
	if err != nil {
		return nil, err
	}
	sent := [][]byte{token}
	for range 4 {
		reply, err := g.Next(token)
		if err != nil {
			return sent, err
		}
		if g.Complete() {
			if !m.Complete() {
				t.Fatal("the server completed before the client")
			}
			return sent, nil
		}
		if token, err = m.Next(reply); err != nil {
			return sent, err
		}
		sent = append(sent, token)
	}
	t.Fatal("no end after 4 rounds")
	return nil, nil
}

func TestGSSAPIAuthenticates(t *testing.T) {
	r := newGSSRealm(t)
	g := r.acceptor.NewGSSAPI()
	if _, err := exchange(t, r.bob.Mechanism(), g, "localhost"); err != nil {
		t.Fatalf("%v\nKDC log:\n%s", err, r.kdc.Log())
	}
	if got := g.Principal(); got != "bob@"+krbtest.Realm {
		t.Errorf("principal %q, want bob@%s", got, krbtest.Realm)
	}
	if g.AuthorizationID() != "" {
		t.Errorf("authorization id %q, none asked for", g.AuthorizationID())
	}
	if _, err := g.Next(nil); !errors.Is(err, ErrGSSAPI) {
		t.Errorf("a token after the end: %v", err)
	}

	// An authorization id travels in the last token.
	carol := newKrbClient(t, r.kdc, "carol/host.example", krb5sasl.Config{AuthorizationID: "someone"})
	g = r.acceptor.NewGSSAPI()
	if _, err := exchange(t, carol.Mechanism(), g, "localhost"); err != nil {
		t.Fatal(err)
	}
	if g.Principal() != "carol/host.example@"+krbtest.Realm || g.AuthorizationID() != "someone" {
		t.Errorf("principal %q, authorization id %q", g.Principal(), g.AuthorizationID())
	}
}

func TestGSSAPIRefuses(t *testing.T) {
	r := newGSSRealm(t)

	t.Run("a ticket for another service", func(t *testing.T) {
		r.kdc.AddPrincipal(t, "zookeeper/otherhost")
		_, err := exchange(t, r.bob.Mechanism(), r.acceptor.NewGSSAPI(), "otherhost")
		if !errors.Is(err, ErrGSSAPI) || !strings.Contains(err.Error(), "not zookeeper/localhost") {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("a replayed AP-REQ", func(t *testing.T) {
		sent, err := exchange(t, r.bob.Mechanism(), r.acceptor.NewGSSAPI(), "localhost")
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.acceptor.NewGSSAPI().Next(sent[0])
		if !errors.Is(err, ErrGSSAPI) || !strings.Contains(err.Error(), "replayed") {
			t.Fatalf("replay: %v", err)
		}
	})

	t.Run("a last token of another exchange", func(t *testing.T) {
		sent, err := exchange(t, r.bob.Mechanism(), r.acceptor.NewGSSAPI(), "localhost")
		if err != nil {
			t.Fatal(err)
		}
		m := r.bob.Mechanism()
		g := r.acceptor.NewGSSAPI()
		token, _ := m.Start("localhost")
		rep, err := g.Next(token)
		if err != nil {
			t.Fatal(err)
		}
		empty, _ := m.Next(rep)
		if _, err := g.Next(empty); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Next(sent[len(sent)-1]); !errors.Is(err, ErrGSSAPI) || g.Complete() {
			t.Fatalf("another exchange's last token: %v, complete %v", err, g.Complete())
		}
	})

	t.Run("a server keytab with old keys", func(t *testing.T) {
		stale := newAcceptor(t, r.kdc.Keytab(t, "zookeeper/localhost"))
		r.kdc.Keytab(t, "zookeeper/localhost") // new keys, so a new ticket
		fresh := newKrbClient(t, r.kdc, "dave", krb5sasl.Config{})
		_, err := exchange(t, fresh.Mechanism(), stale.NewGSSAPI(), "localhost")
		if !errors.Is(err, ErrGSSAPI) || !strings.Contains(err.Error(), "keytab") {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("malformed and oversized tokens", func(t *testing.T) {
		for _, token := range [][]byte{
			nil,
			[]byte("garbage"),
			{0x60, 0x02, 0x06, 0x00},
			bytes.Repeat([]byte{0x60}, MaxGSSAPIToken+1),
		} {
			g := r.acceptor.NewGSSAPI()
			if _, err := g.Next(token); !errors.Is(err, ErrGSSAPI) {
				t.Errorf("token %.20x: %v", token, err)
			}
		}
	})
}

func TestNewAcceptorNeedsTheKey(t *testing.T) {
	r := newGSSRealm(t)
	kt, err := keytab.Load(r.kdc.Keytab(t, "bob"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewAcceptor("zookeeper/localhost@"+krbtest.Realm, kt, time.Minute, time.Now, rand.Reader)
	if err == nil || !strings.Contains(err.Error(), "holds no key of zookeeper/localhost@"+krbtest.Realm) {
		t.Fatalf("got %v", err)
	}
}

// TestGSSAPIRefusesOldEncryptionTypes refuses an RC4 session key, whose
// Wrap tokens would be RFC 1964's, which clients would not read.
func TestGSSAPIRefusesOldEncryptionTypes(t *testing.T) {
	kt := keytab.New()
	if err := kt.AddEntry("zookeeper/localhost", "R", "secret", time.Unix(0, 0), 1, etypeID.RC4_HMAC); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1e9, 0)
	a, err := NewAcceptor("zookeeper/localhost@R", kt, time.Minute, func() time.Time { return now }, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	token, _ := handMadeAPReq(t, kt, etypeID.RC4_HMAC, now, gsskrb5.FlagMutual)
	if _, err := a.NewGSSAPI().Next(token); !errors.Is(err, ErrGSSAPI) || !strings.Contains(err.Error(), "only AES") {
		t.Fatalf("got %v", err)
	}
}

// TestGSSAPIChecksTheTicket refuses expired, not yet valid and invalid
// tickets, and authenticators from a clock too far off.
func TestGSSAPIChecksTheTicket(t *testing.T) {
	kt := keytab.New()
	if err := kt.AddEntry("zookeeper/localhost", "R", "secret", time.Unix(0, 0), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	issued := time.Unix(1e9, 0).UTC()
	for _, tt := range []struct {
		name string
		now  time.Time
		want string
	}{
		{"expired", issued.Add(2 * time.Hour), "not now"},
		{"not yet valid", issued.Add(-time.Hour), "not now"},
		{"the client's clock", issued.Add(30 * time.Minute), "clock"},
		{"within the skew", issued.Add(30 * time.Second), ""},
	} {
		a, err := NewAcceptor("zookeeper/localhost@R", kt, time.Minute, func() time.Time { return tt.now }, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		token, _ := handMadeAPReq(t, kt, etypeID.AES256_CTS_HMAC_SHA1_96, issued, gsskrb5.FlagMutual)
		_, err = a.NewGSSAPI().Next(token)
		if tt.want == "" && err != nil || tt.want != "" && (!errors.Is(err, ErrGSSAPI) || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
