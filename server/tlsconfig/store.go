// Package tlsconfig turns ZooKeeper's TLS settings into crypto/tls
// configurations: the key and trust stores its ssl.keyStore.* and
// ssl.trustStore.* keys name, in the formats ZooKeeper 3.8 reads (PEM,
// PKCS12 and JKS), and its ssl.clientAuth, ssl.protocol,
// ssl.enabledProtocols and ssl.ciphersuites, as its X509Util,
// KeyStoreFileType and SSLContextAndOptions interpret them. The
// ssl.quorum.* keys between servers are the same settings: DialConfig
// makes the connecting side's configuration from the receiving side's,
// and VerifyName checks a server's name as ZooKeeper's ZKTrustManager
// does. A Reloader keeps a server's configuration in step with its files,
// as ZooKeeper does with client.certReload and sslQuorumReloadCertFiles.
//
// The package reads files (LoadKeyStore, LoadTrustStore, Reloader) and
// may make a reverse DNS lookup (VerifyName), but dials and serves no
// connection.
package tlsconfig

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/youmark/pkcs8"
	"software.sslmate.com/src/go-pkcs12"
)

// Type is the format of a key or trust store file.
type Type string

// The formats ZooKeeper 3.8 reads. BCFKS, which needs the BouncyCastle FIPS
// provider, is not among those Collie reads.
const (
	JKS    Type = "JKS"
	PEM    Type = "PEM"
	PKCS12 Type = "PKCS12"
)

// Store is a key or trust store file as ZooKeeper's keys name one
// (ssl.keyStore.location, .password, .passwordPath, .type).
type Store struct {
	Location string
	// Password opens the store; for a PEM key store it decrypts the key,
	// which must then be an encrypted PKCS#8 key. A secret: never log it.
	Password string
	// PasswordPath, when set, names a file holding the password instead
	// (ZooKeeper's .passwordPath keys); one trailing newline is dropped.
	PasswordPath string
	// Type is JKS, PEM or PKCS12 in any case; "" infers it from the file
	// name's extension.
	Type string
}

// String shows the store with its password masked, so that a Store, or
// the Settings and configuration holding it, can be printed or logged.
func (s Store) String() string {
	password := ""
	if s.Password != "" {
		password = "********"
	}
	return fmt.Sprintf("{Location:%q Password:%q PasswordPath:%q Type:%q}", s.Location, password, s.PasswordPath, s.Type)
}

// GoString is String, for %#v.
func (s Store) GoString() string { return "tlsconfig.Store" + s.String() }

// LogValue logs the store without its password.
func (s Store) LogValue() slog.Value {
	return slog.GroupValue(slog.String("location", s.Location), slog.String("type", s.Type), slog.String("password_path", s.PasswordPath))
}

// FileType returns the format of the store: its Type when set, otherwise
// the one its file name's extension names (.jks, .pem, .p12), as
// ZooKeeper's KeyStoreFileType does. Only the exact extension counts:
// ".PEM" and ".pkcs12" name no format.
func (s Store) FileType() (Type, error) {
	if s.Type != "" {
		switch t := Type(strings.ToUpper(s.Type)); t {
		case JKS, PEM, PKCS12:
			return t, nil
		case "BCFKS":
			return "", fmt.Errorf("store type %q is not supported (JKS, PEM and PKCS12 are)", s.Type)
		}
		return "", fmt.Errorf("store type %q is not JKS, PEM or PKCS12", s.Type)
	}
	if i := strings.LastIndexByte(s.Location, '.'); i >= 0 {
		switch s.Location[i:] {
		case ".jks":
			return JKS, nil
		case ".pem":
			return PEM, nil
		case ".p12":
			return PKCS12, nil
		}
	}
	return "", fmt.Errorf("cannot infer the store type of %s from its extension (.jks, .pem or .p12): set its type", s.Location)
}

// password returns the store's password, read from PasswordPath when set.
// read returns the store's type, its password and its file's bytes.
func (s Store) read() (typ Type, password string, data []byte, err error) {
	if typ, err = s.FileType(); err != nil {
		return "", "", nil, err
	}
	if password, err = s.password(); err != nil {
		return "", "", nil, err
	}
	data, err = os.ReadFile(s.Location)
	return typ, password, data, err
}

func (s Store) password() (string, error) {
	if s.PasswordPath == "" {
		return s.Password, nil
	}
	b, err := os.ReadFile(s.PasswordPath)
	if err != nil {
		return "", fmt.Errorf("read the password: %w", err)
	}
	// ZooKeeper's SecretUtils drops one line separator at the end.
	return strings.TrimSuffix(string(b), "\n"), nil
}

// jksMagic starts every JKS file. Java's JKS and PKCS12 key store types each
// read the other format too (keystore.type.compat), and keytool of Java 9
// and later writes PKCS12 unless told otherwise, so files named .jks often
// hold PKCS12: the content decides, not the type.
const jksMagic = 0xfeedfeed

func isJKS(data []byte) bool {
	return len(data) >= 4 && binary.BigEndian.Uint32(data) == jksMagic
}

// LoadKeyStore reads the private keys and certificate chains of a key
// store. Each key, with the chain stored with it, is one tls.Certificate,
// leaf first.
func LoadKeyStore(s Store) ([]tls.Certificate, error) {
	certs, err := loadKeyStore(s)
	if err != nil {
		return nil, fmt.Errorf("key store %s: %w", s.Location, err)
	}
	return certs, nil
}

func loadKeyStore(s Store) ([]tls.Certificate, error) {
	typ, password, data, err := s.read()
	if err != nil {
		return nil, err
	}
	switch {
	case typ == PEM:
		c, err := pemKeyStore(data, password)
		if err != nil {
			return nil, err
		}
		return []tls.Certificate{c}, nil
	case isJKS(data):
		return jksKeyStore(data, password)
	default:
		key, leaf, chain, err := pkcs12.DecodeChain(data, password)
		if err != nil {
			return nil, err
		}
		c, err := certificate(key, append([]*x509.Certificate{leaf}, chain...))
		if err != nil {
			return nil, err
		}
		return []tls.Certificate{c}, nil
	}
}

// pemKeyStore reads a PEM key store as ZooKeeper's PemReader does: the first
// private key of the file, which must be encrypted PKCS#8 when there is a
// password, and every certificate, leaf first. A key without password may
// also be PKCS#1 or SEC 1, and an encrypted one PBES2 (OpenSSL 3's
// default), which ZooKeeper on Java 17 refuses.
func pemKeyStore(data []byte, password string) (tls.Certificate, error) {
	var key crypto.PrivateKey
	var certs []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		switch {
		case strings.HasSuffix(block.Type, "CERTIFICATE"):
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return tls.Certificate{}, err
			}
			certs = append(certs, c)
		case strings.HasSuffix(block.Type, "PRIVATE KEY") && key == nil:
			k, err := pemPrivateKey(block, password)
			if err != nil {
				return tls.Certificate{}, err
			}
			key = k
		}
	}
	if key == nil {
		return tls.Certificate{}, errors.New("no private key found")
	}
	if len(certs) == 0 {
		return tls.Certificate{}, errors.New("no certificate found")
	}
	return certificate(key, certs)
}

func pemPrivateKey(block *pem.Block, password string) (crypto.PrivateKey, error) {
	if block.Type == "ENCRYPTED PRIVATE KEY" {
		if password == "" {
			return nil, errors.New("the private key is encrypted, but the store has no password")
		}
		der, ok, err := decryptPBES1(block.Bytes, password)
		if err != nil {
			return nil, err
		}
		if ok {
			return x509.ParsePKCS8PrivateKey(der)
		}
		k, err := pkcs8.ParsePKCS8PrivateKey(block.Bytes, []byte(password))
		if err != nil {
			return nil, fmt.Errorf("decrypt the private key: %w", err)
		}
		return k, nil
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, fmt.Errorf("cannot read the %s block", block.Type)
}

// jksKeyStore reads every private key entry of a JKS file. As in ZooKeeper,
// which opens the keys with the store's password, the keys must have the
// store's password.
func jksKeyStore(data []byte, password string) ([]tls.Certificate, error) {
	ks, err := loadJKS(data, password)
	if err != nil {
		return nil, err
	}
	var out []tls.Certificate
	for _, alias := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		e, err := ks.GetPrivateKeyEntry(alias, []byte(password))
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", alias, err)
		}
		key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", alias, err)
		}
		var chain []*x509.Certificate
		for _, c := range e.CertificateChain {
			cert, err := x509.ParseCertificate(c.Content)
			if err != nil {
				return nil, fmt.Errorf("entry %q: %w", alias, err)
			}
			chain = append(chain, cert)
		}
		c, err := certificate(key, chain)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", alias, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no private key entry")
	}
	return out, nil
}

func loadJKS(data []byte, password string) (keystore.KeyStore, error) {
	ks := keystore.New(keystore.WithOrderedAliases(), keystore.WithCaseExactAliases())
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		return ks, fmt.Errorf("read JKS (wrong password?): %w", err)
	}
	return ks, nil
}

// certificate pairs key with its chain. The leaf is the certificate of the
// key's public key, wherever the file put it; the others follow in file
// order.
func certificate(key crypto.PrivateKey, chain []*x509.Certificate) (tls.Certificate, error) {
	signer, ok := key.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("unsupported private key type %T", key)
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	pub, ok := signer.Public().(equaler)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("unsupported private key type %T", key)
	}
	i := slices.IndexFunc(chain, func(c *x509.Certificate) bool { return pub.Equal(c.PublicKey) })
	if i < 0 {
		return tls.Certificate{}, errors.New("no certificate matches the private key")
	}
	ordered := append([]*x509.Certificate{chain[i]}, slices.Delete(slices.Clone(chain), i, i+1)...)
	c := tls.Certificate{PrivateKey: key, Leaf: ordered[0]}
	for _, cert := range ordered {
		c.Certificate = append(c.Certificate, cert.Raw)
	}
	return c, nil
}

// LoadTrustStore reads the certificates a trust store trusts: every
// certificate of a PEM file; the trusted certificate entries of a JKS file;
// the certificates of a PKCS12 file that carry Java's trust attribute
// (keytool -importcert writes it; openssl 3.0 does not, and Java ignores a
// certificate without it). A store that trusts nothing is an error, as in
// ZooKeeper, whose trust manager then cannot be built.
func LoadTrustStore(s Store) ([]*x509.Certificate, error) {
	certs, err := loadTrustStore(s)
	if err == nil && len(certs) == 0 {
		err = errors.New("trusts no certificate")
	}
	if err != nil {
		return nil, fmt.Errorf("trust store %s: %w", s.Location, err)
	}
	return certs, nil
}

func loadTrustStore(s Store) ([]*x509.Certificate, error) {
	typ, password, data, err := s.read()
	if err != nil {
		return nil, err
	}
	switch {
	case typ == PEM:
		var certs []*x509.Certificate
		for rest := data; ; {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				return certs, nil
			}
			if strings.HasSuffix(block.Type, "CERTIFICATE") {
				c, err := x509.ParseCertificate(block.Bytes)
				if err != nil {
					return nil, err
				}
				certs = append(certs, c)
			}
		}
	case isJKS(data):
		ks, err := loadJKS(data, password)
		if err != nil {
			return nil, err
		}
		var certs []*x509.Certificate
		for _, alias := range ks.Aliases() {
			if !ks.IsTrustedCertificateEntry(alias) {
				continue
			}
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, err
			}
			c, err := x509.ParseCertificate(e.Certificate.Content)
			if err != nil {
				return nil, fmt.Errorf("entry %q: %w", alias, err)
			}
			certs = append(certs, c)
		}
		return certs, nil
	default:
		certs, err := pkcs12.DecodeTrustStore(data, password)
		if err != nil {
			return nil, fmt.Errorf("%w (a PKCS12 trust store holds only certificates marked trusted for Java, as keytool -importcert writes them)", err)
		}
		return certs, nil
	}
}

// Pool returns a pool of certs.
func Pool(certs []*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}
