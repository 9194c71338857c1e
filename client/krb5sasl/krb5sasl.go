// Package krb5sasl is the client side of SASL GSSAPI (Kerberos V5, RFC
// 4752) for ZooKeeper servers, Collie's and ZooKeeper's alike, built on
// gokrb5. A Client logs in once, from a keytab or a credential cache, and
// hands out a Mechanism for each connection:
//
//	cl, err := krb5sasl.NewClient(krb5sasl.Config{
//		Krb5Conf:  "/etc/krb5.conf",
//		Principal: "app",          // in the default realm
//		Keytab:    "/etc/app.keytab",
//	})
//	...
//	cfg.SASL = func() client.SASLMechanism { return cl.Mechanism() }
//
// The service principal is named as ZooKeeper's Java client names it:
// "zookeeper/<server host>" (zookeeper.sasl.client.username names another
// first part; zookeeper.server.principal replaces the whole), the host
// canonicalized through DNS unless told not to
// (zookeeper.sasl.client.canonicalize.hostname=false). The client asks
// for mutual authentication, so the server proves it holds the service's
// key, and for no security layer, the only one ZooKeeper offers.
//
// The package does not import the client package: a Mechanism has the
// methods of client.SASLMechanism.
package krb5sasl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/collie-io/collie/internal/gsskrb5"
)

// Config says how a Client logs in and whom it authenticates to.
type Config struct {
	// Krb5Conf is the krb5.conf to read; "" reads the file KRB5_CONFIG
	// names, else /etc/krb5.conf.
	Krb5Conf string

	// Keytab and Principal log in with a key: Principal is the client's
	// name, primary[/instance][@REALM] (the default realm when none).
	// Without a Keytab, the credential cache CCache (default: the file
	// KRB5CCNAME names, "FILE:" or not, else /tmp/krb5cc_<uid>) gives
	// the principal and its ticket, as after kinit; a Principal given
	// then must be the cache's.
	Keytab    string
	Principal string
	CCache    string

	// ServiceName is the first part of the service principal; ""
	// is "zookeeper".
	ServiceName string
	// ServerPrincipal, when set, is the whole service principal,
	// service/host, and ServiceName and the server's host are not used.
	// A realm after "@" is dropped: the krb5.conf's [domain_realm] (else
	// the default realm) gives the service's realm, as gokrb5 finds it.
	ServerPrincipal string
	// NoCanonicalize uses the host as the connect string gives it,
	// without the DNS lookups that turn an address or alias into the
	// host's name.
	NoCanonicalize bool
	// AuthorizationID is the identity asked for; "" asks for none, and
	// the server uses the principal.
	AuthorizationID string
}

// A Client is a logged-in Kerberos principal. It is safe for concurrent
// use by the Mechanisms of several connections.
type Client struct {
	cfg Config
	krb *krbclient.Client
}

// NewClient reads the krb5.conf and logs in.
func NewClient(cfg Config) (*Client, error) {
	path := cfg.Krb5Conf
	if path == "" {
		path = envOr("KRB5_CONFIG", "/etc/krb5.conf")
	}
	kc, err := krbconfig.Load(path)
	if err != nil {
		return nil, fmt.Errorf("krb5sasl: %s: %w", path, err)
	}
	var cl *krbclient.Client
	if cfg.Keytab != "" {
		if cl, err = keytabClient(cfg, kc); err != nil {
			return nil, err
		}
	} else if cl, err = ccacheClient(cfg, kc); err != nil {
		return nil, err
	}
	if err := cl.Login(); err != nil {
		return nil, fmt.Errorf("krb5sasl: login of %s: %w", cl.Credentials.CName().PrincipalNameString()+"@"+cl.Credentials.Domain(), err)
	}
	return &Client{cfg: cfg, krb: cl}, nil
}

// keytabClient is a client of cfg.Principal's key in cfg.Keytab.
func keytabClient(cfg Config, kc *krbconfig.Config) (*krbclient.Client, error) {
	kt, err := keytab.Load(cfg.Keytab)
	if err != nil {
		return nil, fmt.Errorf("krb5sasl: keytab %s: %w", cfg.Keytab, err)
	}
	name, realm := splitPrincipal(cfg.Principal, kc)
	if name == "" {
		return nil, errors.New("krb5sasl: a keytab needs a Principal")
	}
	// Checked here, so that the error names what to fix rather than
	// coming back from the KDC exchange.
	found := false
	for _, e := range kt.Entries {
		found = found || e.Principal.Realm == realm && strings.Join(e.Principal.Components, "/") == name
	}
	if !found {
		return nil, fmt.Errorf("krb5sasl: keytab %s holds no key of %s@%s (klist -k %s lists its principals)", cfg.Keytab, name, realm, cfg.Keytab)
	}
	return krbclient.NewWithKeytab(name, realm, kt, kc, krbclient.DisablePAFXFAST(true)), nil
}

// ccacheClient is a client of the ticket-granting ticket in the
// credential cache, which must be cfg.Principal's when one is given.
func ccacheClient(cfg Config, kc *krbconfig.Config) (*krbclient.Client, error) {
	path := cfg.CCache
	if path == "" {
		path = DefaultCCache()
	}
	if kind, _, ok := strings.Cut(path, ":"); ok && !strings.EqualFold(kind, "FILE") && !strings.Contains(kind, "/") {
		return nil, fmt.Errorf("krb5sasl: credential cache %s: only FILE caches can be read; kinit -c FILE:path writes one", path)
	}
	path = strings.TrimPrefix(strings.TrimPrefix(path, "FILE:"), "file:")
	cc, err := credentials.LoadCCache(path)
	if err != nil {
		return nil, fmt.Errorf("krb5sasl: no ticket cache: %s: %w (log in with kinit first, or name the cache with KRB5CCNAME)", path, err)
	}
	if cfg.Principal != "" {
		name, realm := splitPrincipal(cfg.Principal, kc)
		if got := cc.DefaultPrincipal; got.Realm != realm || got.PrincipalName.PrincipalNameString() != name {
			return nil, fmt.Errorf("krb5sasl: ticket cache %s is %s@%s's, not %s@%s's", path, got.PrincipalName.PrincipalNameString(), got.Realm, name, realm)
		}
	}
	cl, err := krbclient.NewFromCCache(cc, kc, krbclient.DisablePAFXFAST(true))
	if err != nil {
		return nil, fmt.Errorf("krb5sasl: ticket cache %s: %w", path, err)
	}
	return cl, nil
}

// splitPrincipal splits primary[/instance][@REALM] at the realm, the
// krb5.conf's default realm when it names none.
func splitPrincipal(principal string, kc *krbconfig.Config) (name, realm string) {
	name, realm, _ = strings.Cut(principal, "@")
	if realm == "" {
		realm = kc.LibDefaults.DefaultRealm
	}
	return name, realm
}

// DefaultCCache is the credential cache read when none is named, as Java
// and MIT's library find it: the one KRB5CCNAME names, else
// /tmp/krb5cc_<uid>.
func DefaultCCache() string {
	return envOr("KRB5CCNAME", fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid()))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Close forgets the client's tickets.
func (c *Client) Close() { c.krb.Destroy() }

// Mechanism returns the SASL mechanism of one connection.
func (c *Client) Mechanism() *Mechanism { return &Mechanism{c: c} }

// servicePrincipal names the service on host as ZooKeeper's Java client
// does.
func (c *Client) servicePrincipal(host string) string {
	if c.cfg.ServerPrincipal != "" {
		name, _, _ := strings.Cut(c.cfg.ServerPrincipal, "@")
		return name
	}
	service := c.cfg.ServiceName
	if service == "" {
		service = "zookeeper"
	}
	if !c.cfg.NoCanonicalize {
		host = canonicalHost(host)
	}
	return service + "/" + host
}

// canonicalHost is Java's InetAddress.getCanonicalHostName of the host's
// first address: the name the address maps back to, or the host as
// given when it maps to none.
func canonicalHost(host string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil || len(addrs) == 0 {
		return host
	}
	names, err := net.DefaultResolver.LookupAddr(ctx, addrs[0])
	if err != nil || len(names) == 0 {
		return host
	}
	return strings.TrimSuffix(names[0], ".")
}

// step is where a Mechanism's exchange stands.
type step uint8

const (
	stepNew    step = iota // Start is due
	stepAPRep              // the server's AP-REP is due
	stepLayers             // the server's wrapped offer of layers is due
	stepDone               // complete
	stepFailed             // an error ended the exchange
)

// A Mechanism is the client side of one GSSAPI exchange.
type Mechanism struct {
	c     *Client
	step  step
	auth  types.Authenticator
	key   types.EncryptionKey // the ticket's session key
	wrap  gsskrb5.WrapKey
	seq   uint64 // the client's sequence number
	spn   string
	realm string
}

// Name is the SASL name of the mechanism.
func (m *Mechanism) Name() string { return "GSSAPI" }

// Complete reports whether the client has sent its last token after
// verifying the server.
func (m *Mechanism) Complete() bool { return m.step == stepDone }

// ServicePrincipal returns the principal Start authenticated to.
func (m *Mechanism) ServicePrincipal() string { return m.spn }

// Start gets a ticket for the service on serverHost and returns the
// AP-REQ that presents it.
func (m *Mechanism) Start(serverHost string) ([]byte, error) {
	if m.step != stepNew {
		return nil, m.fail(errors.New("Start called twice"))
	}
	m.spn = m.c.servicePrincipal(serverHost)
	tkt, key, err := m.c.krb.GetServiceTicket(m.spn)
	if err != nil {
		return nil, m.fail(fmt.Errorf("ticket for %s: %w", m.spn, err))
	}
	creds := m.c.krb.Credentials
	auth, err := types.NewAuthenticator(creds.Domain(), creds.CName())
	if err != nil {
		return nil, m.fail(err)
	}
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, m.fail(err)
	}
	if err := auth.GenerateSeqNumberAndSubKey(key.KeyType, et.GetKeyByteSize()); err != nil {
		return nil, m.fail(err)
	}
	auth.Cksum = gsskrb5.NewChecksum(gsskrb5.FlagMutual | gsskrb5.FlagSequence | gsskrb5.FlagInteg)
	req, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		return nil, m.fail(err)
	}
	msg, err := req.Marshal()
	if err != nil {
		return nil, m.fail(err)
	}
	m.auth, m.key = auth, key
	m.wrap = gsskrb5.WrapKey{Key: auth.SubKey}
	m.seq = uint64(auth.SeqNumber)
	m.step = stepAPRep
	return gsskrb5.WrapContextToken(gsskrb5.TokAPReq, msg), nil
}

// Next answers the server's token: the AP-REP with an empty token, the
// offer of security layers with the choice of none.
func (m *Mechanism) Next(challenge []byte) ([]byte, error) {
	switch m.step {
	case stepAPRep:
		if err := m.verifyAPRep(challenge); err != nil {
			return nil, m.fail(err)
		}
		m.step = stepLayers
		return []byte{}, nil
	case stepLayers:
		offer, _, err := m.wrap.Unwrap(challenge, true)
		if err != nil {
			return nil, m.fail(fmt.Errorf("the server's offer of security layers: %w", err))
		}
		if len(offer) != 4 || offer[0]&0x01 == 0 {
			return nil, m.fail(fmt.Errorf("the server offers no way to go without a security layer (%x)", offer))
		}
		choice := append([]byte{0x01, 0, 0, 0}, m.c.cfg.AuthorizationID...)
		out, err := m.wrap.Wrap(choice, m.seq, false)
		if err != nil {
			return nil, m.fail(err)
		}
		m.step = stepDone
		return out, nil
	case stepDone:
		// The server's last answer carries no token.
		if len(challenge) == 0 {
			return nil, nil
		}
		return nil, m.fail(errors.New("a token after the exchange completed"))
	}
	return nil, m.fail(errors.New("Next called out of turn"))
}

// verifyAPRep checks that the server opened the ticket: it returns our
// authenticator's time, encrypted with the session key.
func (m *Mechanism) verifyAPRep(token []byte) error {
	id, msg, err := gsskrb5.ParseContextToken(token)
	if err != nil {
		return fmt.Errorf("the server's answer: %w", err)
	}
	if id != gsskrb5.TokAPRep {
		return fmt.Errorf("the server answered with context token %x, not an AP-REP", id)
	}
	var rep messages.APRep
	if err := rep.Unmarshal(msg); err != nil {
		return fmt.Errorf("AP-REP: %w", err)
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, m.key, keyusage.AP_REP_ENCPART)
	if err != nil {
		return fmt.Errorf("the server does not hold the service's key: %w", err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		return fmt.Errorf("AP-REP: %w", err)
	}
	if part.CTime.Unix() != m.auth.CTime.Unix() || part.Cusec != m.auth.Cusec {
		return errors.New("the AP-REP does not answer this authenticator")
	}
	if part.Subkey.KeyType != 0 {
		m.wrap = gsskrb5.WrapKey{Key: part.Subkey, AcceptorSubkey: true}
	}
	return nil
}

func (m *Mechanism) fail(err error) error {
	m.step = stepFailed
	return fmt.Errorf("krb5sasl: %w", err)
}
