package sasl

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"sync"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/collie-io/collie/internal/gsskrb5"
)

// MaxGSSAPIToken is the longest token a GSSAPI client may send. An
// AP-REQ is a ticket and an authenticator; with the authorization data
// of Active Directory (a PAC) it stays below Windows' largest token size,
// 65535 bytes.
const MaxGSSAPIToken = 65535

// ErrGSSAPI is what every failure of a GSSAPI exchange wraps: a ticket
// the keytab cannot open, an expired or replayed authenticator, a
// malformed, oversized or out-of-turn token.
var ErrGSSAPI = errors.New("sasl: GSSAPI authentication failed")

// The SASL security layers of RFC 4752. ZooKeeper's server offers none
// but "auth": authentication without a layer.
const (
	layerNone   = 0x01
	maxReceive  = 65536 // what Java's server announces, though no layer uses it
	replayLimit = 100000
)

// rfc4121Types are the encryption types whose GSS-API tokens are RFC
// 4121's: AES with HMAC-SHA1 (RFC 3962) and with SHA-2 (RFC 8009).
var rfc4121Types = []int32{
	etypeID.AES128_CTS_HMAC_SHA1_96, etypeID.AES256_CTS_HMAC_SHA1_96,
	etypeID.AES128_CTS_HMAC_SHA256_128, etypeID.AES256_CTS_HMAC_SHA384_192,
}

// An Acceptor is what the GSSAPI exchanges of one server share: the
// service principal and its keys, the allowed clock skew and a replay
// cache of the authenticators seen. It is safe for concurrent use.
type Acceptor struct {
	principal types.PrincipalName
	realm     string
	skew      time.Duration
	now       func() time.Time
	rand      io.Reader

	// mu guards the fields below it.
	mu      sync.Mutex
	keytab  *keytab.Keytab
	replays map[replayKey]time.Time // an authenticator seen → when it may be forgotten
}

type replayKey struct {
	client string
	ctime  time.Time
}

// NewAcceptor returns an Acceptor for the service principal
// primary/instance@realm, with kt holding its keys. now is the clock
// (time.Now outside tests), rand the source of sequence numbers.
func NewAcceptor(principal string, kt *keytab.Keytab, skew time.Duration, now func() time.Time, rand io.Reader) (*Acceptor, error) {
	name, realm := types.ParseSPNString(principal)
	if realm == "" {
		return nil, fmt.Errorf("sasl: service principal %q has no realm", principal)
	}
	if !holdsKey(kt, name, realm) {
		return nil, fmt.Errorf("sasl: the keytab holds no key of %s", principal)
	}
	return &Acceptor{principal: name, realm: realm, keytab: kt, skew: skew, now: now, rand: rand, replays: make(map[replayKey]time.Time)}, nil
}

// holdsKey reports whether kt holds a key of name@realm: without one it
// could open no ticket.
func holdsKey(kt *keytab.Keytab, name types.PrincipalName, realm string) bool {
	for _, e := range kt.Entries {
		if e.Principal.Realm == realm && slices.Equal(e.Principal.Components, name.NameString) {
			return true
		}
	}
	return false
}

// SetKeytab replaces the keys, for a keytab rewritten with new ones. A
// keytab without a key of the principal is refused and the keys stay.
func (a *Acceptor) SetKeytab(kt *keytab.Keytab) error {
	if !holdsKey(kt, a.principal, a.realm) {
		return fmt.Errorf("sasl: the keytab holds no key of %s@%s", a.principal.PrincipalNameString(), a.realm)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keytab = kt
	return nil
}

func (a *Acceptor) keys() *keytab.Keytab {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.keytab
}

// gssStep is where a GSSAPI exchange stands.
type gssStep uint8

const (
	gssStart    gssStep = iota // the AP-REQ is due
	gssAfterRep                // the client's empty answer to the AP-REP is due
	gssLayer                   // the client's wrapped choice of security layer is due
	gssEnded                   // completed or failed
)

// GSSAPI is the server side of one SASL GSSAPI exchange (RFC 4752), as
// Java's GSSAPI SaslServer runs it for ZooKeeper:
//
//	client: AP-REQ (a context token)
//	server: AP-REP, if the client asked for mutual authentication
//	client: (empty token), after an AP-REP
//	server: Wrap{layers offered: none; max buffer 65536}
//	client: Wrap{layer chosen: none; max buffer; authorization id}
//	server: (no token): complete
//
// after which the client is authenticated as the principal of its
// ticket. It does no I/O and starts no goroutine.
type GSSAPI struct {
	a       *Acceptor
	step    gssStep
	key     gsskrb5.WrapKey
	seq     uint64 // the acceptor's sequence number
	peer    string // the client's principal, name@REALM
	authzid string
}

// NewGSSAPI starts an exchange of a.
func (a *Acceptor) NewGSSAPI() *GSSAPI { return &GSSAPI{a: a} }

// Complete reports whether the client has authenticated.
func (g *GSSAPI) Complete() bool { return g.step == gssEnded && g.peer != "" }

// Principal returns the principal the client authenticated as, once
// Complete: primary[/instance]@REALM.
func (g *GSSAPI) Principal() string { return g.peer }

// AuthorizationID returns the authorization id the client asked for, ""
// when it asked for none.
func (g *GSSAPI) AuthorizationID() string { return g.authzid }

// Next takes the client's token and returns the server's; nil once the
// exchange completes. Any error wraps ErrGSSAPI and ends the exchange.
func (g *GSSAPI) Next(token []byte) ([]byte, error) {
	if len(token) > MaxGSSAPIToken {
		g.step = gssEnded
		return nil, fmt.Errorf("%w: a token of %d bytes, more than %d", ErrGSSAPI, len(token), MaxGSSAPIToken)
	}
	var out []byte
	var err error
	switch g.step {
	case gssStart:
		out, err = g.accept(token)
	case gssAfterRep:
		// Java's server ignores what the client sends here, which is
		// empty from every client.
		out, err = g.offerLayers()
	case gssLayer:
		err = g.chooseLayer(token)
	default:
		err = errors.New("a token after the exchange ended")
	}
	if err != nil {
		g.step, g.peer = gssEnded, ""
		return nil, fmt.Errorf("%w: %v", ErrGSSAPI, err)
	}
	return out, nil
}

// accept verifies the AP-REQ as RFC 4120 section 3.2.3 and RFC 4121 ask.
func (g *GSSAPI) accept(token []byte) ([]byte, error) {
	id, msg, err := gsskrb5.ParseContextToken(token)
	if err != nil {
		return nil, err
	}
	if id != gsskrb5.TokAPReq {
		return nil, fmt.Errorf("context token %x, not an AP-REQ", id)
	}
	var req messages.APReq
	if err := req.Unmarshal(msg); err != nil {
		return nil, fmt.Errorf("AP-REQ: %v", err)
	}
	a := g.a
	if req.Ticket.Realm != a.realm || !req.Ticket.SName.Equal(a.principal) {
		return nil, fmt.Errorf("a ticket for %s@%s, not %s@%s",
			req.Ticket.SName.PrincipalNameString(), req.Ticket.Realm, a.principal.PrincipalNameString(), a.realm)
	}
	if err := req.Ticket.DecryptEncPart(a.keys(), &a.principal); err != nil {
		return nil, fmt.Errorf("the keytab does not open the ticket: %v", err)
	}
	tkt := req.Ticket.DecryptedEncPart
	now := a.now()
	if types.IsFlagSet(&tkt.Flags, flags.Invalid) {
		return nil, errors.New("the ticket is marked invalid (postdated and not yet validated)")
	}
	if tkt.StartTime.Sub(now) > a.skew || now.Sub(tkt.EndTime) > a.skew {
		return nil, fmt.Errorf("the ticket is valid from %v to %v, not now", tkt.StartTime, tkt.EndTime)
	}
	if err := req.DecryptAuthenticator(tkt.Key); err != nil {
		return nil, fmt.Errorf("authenticator: %v", err)
	}
	auth := req.Authenticator
	if !auth.CName.Equal(tkt.CName) || auth.CRealm != tkt.CRealm {
		return nil, errors.New("the authenticator's client is not the ticket's")
	}
	ctime := auth.CTime.Add(time.Duration(auth.Cusec) * time.Microsecond)
	if d := now.Sub(ctime); d > a.skew || -d > a.skew {
		return nil, fmt.Errorf("the client's clock is %v off, more than %v", d, a.skew)
	}
	ctxFlags, err := gsskrb5.ChecksumFlags(auth.Cksum)
	if err != nil {
		return nil, err
	}
	key := tkt.Key
	if auth.SubKey.KeyType != 0 {
		key = auth.SubKey
	}
	if !slices.Contains(rfc4121Types, key.KeyType) {
		return nil, fmt.Errorf("a key of encryption type %d: only AES keys, whose Wrap tokens are RFC 4121's, are supported", key.KeyType)
	}
	peer := tkt.CName.PrincipalNameString() + "@" + tkt.CRealm
	if err := a.remember(peer, ctime, now); err != nil {
		return nil, err
	}
	g.peer = peer
	g.key = gsskrb5.WrapKey{Key: key}
	g.seq = uint64(auth.SeqNumber) // without an AP-REP both sides count from the initiator's number
	if ctxFlags&gsskrb5.FlagMutual == 0 {
		return g.offerLayers()
	}
	g.step = gssAfterRep
	return g.reply(auth, tkt.Key)
}

// remember records an authenticator, and refuses one seen before.
func (a *Acceptor) remember(client string, ctime, now time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := replayKey{client, ctime}
	if until, seen := a.replays[k]; seen && now.Before(until) {
		return fmt.Errorf("a replayed authenticator of %s", client)
	}
	if len(a.replays) >= replayLimit {
		for k, until := range a.replays {
			if !now.Before(until) {
				delete(a.replays, k)
			}
		}
		if len(a.replays) >= replayLimit {
			return errors.New("too many authentications within the clock skew to check for replays")
		}
	}
	// An authenticator older than the skew is refused anyway.
	a.replays[k] = ctime.Add(2 * a.skew)
	return nil
}

// encAPRepPart is EncAPRepPart without the subkey, which this acceptor
// never asserts: both sides keep the initiator's key.
type encAPRepPart struct {
	CTime          time.Time `asn1:"generalized,explicit,tag:0"`
	Cusec          int       `asn1:"explicit,tag:1"`
	SequenceNumber int64     `asn1:"explicit,tag:3"`
}

// reply returns the AP-REP of mutual authentication, with a sequence
// number of the acceptor's own.
func (g *GSSAPI) reply(auth types.Authenticator, sessionKey types.EncryptionKey) ([]byte, error) {
	n, err := rand.Int(g.a.rand, big.NewInt(1<<30))
	if err != nil {
		return nil, fmt.Errorf("no sequence number: %v", err)
	}
	g.seq = n.Uint64() + 1
	part, err := asn1.Marshal(encAPRepPart{CTime: auth.CTime, Cusec: auth.Cusec, SequenceNumber: int64(g.seq)})
	if err != nil {
		return nil, fmt.Errorf("AP-REP: %v", err)
	}
	part = asn1tools.AddASNAppTag(part, asnAppTag.EncAPRepPart)
	enc, err := crypto.GetEncryptedData(part, sessionKey, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, fmt.Errorf("AP-REP: %v", err)
	}
	rep, err := asn1.Marshal(messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: enc})
	if err != nil {
		return nil, fmt.Errorf("AP-REP: %v", err)
	}
	return gsskrb5.WrapContextToken(gsskrb5.TokAPRep, asn1tools.AddASNAppTag(rep, asnAppTag.APREP)), nil
}

// offerLayers returns the wrapped offer of security layers: none.
func (g *GSSAPI) offerLayers() ([]byte, error) {
	offer := []byte{layerNone, maxReceive >> 16 & 0xff, maxReceive >> 8 & 0xff, maxReceive & 0xff}
	out, err := g.key.Wrap(offer, g.seq, true)
	if err != nil {
		return nil, err
	}
	g.step = gssLayer
	return out, nil
}

// chooseLayer checks the client's wrapped choice: no security layer,
// then an optional authorization id.
func (g *GSSAPI) chooseLayer(token []byte) error {
	payload, _, err := g.key.Unwrap(token, false)
	if err != nil {
		return err
	}
	if len(payload) < 4 {
		return fmt.Errorf("the client's choice of security layer has %d bytes, fewer than 4", len(payload))
	}
	if payload[0] != layerNone {
		return fmt.Errorf("the client chose security layer %#x; only none (%#x) is offered", payload[0], layerNone)
	}
	// The client's max buffer (payload[1:4]) is of no use without a layer.
	g.authzid = string(payload[4:])
	g.step = gssEnded
	return nil
}
