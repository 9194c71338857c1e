package sasl

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/collie-io/collie/internal/gsskrb5"
	"github.com/collie-io/collie/internal/rfc2831"
)

// FuzzDirectives parses arbitrary digest-responses; whatever parses must
// parse again to the same values once written back with quoted values.
func FuzzDirectives(f *testing.F) {
	f.Add([]byte(`username="bob",realm="zk-sasl-md5",nonce="n",cnonce="c",nc=00000001,qop=auth,digest-uri="zookeeper/zk-sasl-md5",response=0123`))
	f.Add([]byte(` a = "x\"y" ,, b=2`))
	f.Add([]byte(`a="unterminated`))
	keys := []string{"username", "realm", "nonce", "cnonce", "nc", "qop", "digest-uri", "response", "a", "b"}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseDirectives(b, keys...)
		if err != nil {
			return
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(d)) {
			parts = append(parts, k+"="+rfc2831.Quote(string(d[k])))
		}
		again, err := parseDirectives([]byte(strings.Join(parts, ",")), keys...)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", strings.Join(parts, ","), err)
		}
		if !maps.EqualFunc(d, again, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Fatalf("re-parse differs: %q, %q", d, again)
		}
	})
}

// FuzzDigestMD5 sends arbitrary tokens to an exchange. Nothing may panic,
// and a client that is not bob with his password never authenticates: the
// only tokens that do are built by the seed's client.
func FuzzDigestMD5(f *testing.F) {
	bob := client{user: "bob", password: "bobsecret", realm: Realm, uri: DigestURI, cnonce: "c1"}
	seed := NewDigestMD5(users("bob", "bobsecret"), fixedRand(9))
	challenge, _ := seed.Next(nil)
	f.Add([]byte{}, bob.respond(challenge), []byte{})
	f.Add([]byte("initial"), []byte(`username="bob",realm="zk-sasl-md5"`), []byte("again"))
	f.Fuzz(func(t *testing.T, first, second, third []byte) {
		s := NewDigestMD5(users("bob", "bobsecret"), fixedRand(9))
		for i, tok := range [][]byte{first, second, third} {
			_, err := s.Next(tok)
			if err == nil && s.Complete() && i != 1 {
				t.Fatalf("complete after token %d", i)
			}
		}
		if s.Complete() && s.Username() != "bob" {
			t.Fatalf("authenticated as %q", s.Username())
		}
	})
}

// FuzzGSSAPI sends arbitrary tokens to a GSSAPI exchange. The seeds are
// real exchanges, with a ticket made from the keytab's key, so mutations
// reach every step; nothing may panic, and only the seeds' tokens
// authenticate, as the client of their ticket.
func FuzzGSSAPI(f *testing.F) {
	kt := keytab.New()
	if err := kt.AddEntry("zookeeper/localhost", "R", "fuzz", time.Unix(0, 0), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1e9, 0).UTC()
	newAcceptor := func() *Acceptor {
		a, err := NewAcceptor("zookeeper/localhost@R", kt, time.Minute, func() time.Time { return now }, fixedRand(3))
		if err != nil {
			f.Fatal(err)
		}
		return a
	}
	for _, mutual := range []bool{false, true} {
		first, second, third := seedExchange(f, kt, now, mutual, newAcceptor())
		f.Add(first, second, third)
	}
	f.Add([]byte{}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, first, second, third []byte) {
		g := newAcceptor().NewGSSAPI() // a replay cache of its own
		for _, tok := range [][]byte{first, second, third} {
			g.Next(tok)
		}
		if g.Complete() && g.Principal() != "bob@R" {
			t.Fatalf("authenticated as %q", g.Principal())
		}
	})
}

// seedExchange makes the tokens a client sends in a whole exchange with
// a, with or without mutual authentication.
func seedExchange(f *testing.F, kt *keytab.Keytab, now time.Time, mutual bool, a *Acceptor) (first, second, third []byte) {
	flags := uint32(gsskrb5.FlagInteg)
	if mutual {
		flags |= gsskrb5.FlagMutual
	}
	first, key := handMadeAPReq(f, kt, etypeID.AES256_CTS_HMAC_SHA1_96, now, flags)
	g := a.NewGSSAPI()
	offer, err := g.Next(first)
	if err != nil {
		f.Fatal(err)
	}
	if mutual {
		second = []byte{}
		if offer, err = g.Next(second); err != nil {
			f.Fatal(err)
		}
	}
	wk := gsskrb5.WrapKey{Key: key}
	if _, _, err := wk.Unwrap(offer, true); err != nil {
		f.Fatal(err)
	}
	last, err := wk.Wrap([]byte{1, 0, 0, 0}, 5, false)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := g.Next(last); err != nil || !g.Complete() {
		f.Fatalf("seed exchange: %v", err)
	}
	if mutual {
		return first, second, last
	}
	return first, last, nil
}

// handMadeAPReq returns the AP-REQ context token of bob@R for
// zookeeper/localhost@R, with a ticket of encryption type etype made from
// kt's key, and its session key: what a KDC and a client would make.
func handMadeAPReq(tb testing.TB, kt *keytab.Keytab, etype int32, now time.Time, flags uint32) ([]byte, types.EncryptionKey) {
	bob := types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, "bob")
	svc := types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, "zookeeper/localhost")
	tkt, key, err := messages.NewTicket(bob, "R", svc, "R", types.NewKrbFlags(), kt, etype, 1, now, now, now.Add(time.Hour), now.Add(time.Hour))
	if err != nil {
		tb.Fatal(err)
	}
	auth, err := types.NewAuthenticator("R", bob)
	if err != nil {
		tb.Fatal(err)
	}
	auth.CTime, auth.Cusec, auth.SeqNumber = now, 0, 5
	auth.Cksum = gsskrb5.NewChecksum(flags)
	req, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		tb.Fatal(err)
	}
	msg, err := req.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return gsskrb5.WrapContextToken(gsskrb5.TokAPReq, msg), key
}
