package config

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// QuorumAuth is SASL authentication between the servers of an ensemble,
// configured as ZooKeeper 3.8 configures it: the quorum.auth.* keys of
// zoo.cfg, and two sections of the JAAS file. The mechanism is
// DIGEST-MD5; Kerberos (Krb5LoginModule in those sections) is refused.
//
// ZooKeeper's learner (a follower or observer connecting to its leader)
// is, in Collie, the dialling side of a connection between two servers,
// and ZooKeeper's server the accepting side: every two servers dial each
// other, so each is both.
type QuorumAuth struct {
	// EnableSASL (quorum.auth.enableSasl) loads both sections and lets the
	// server authenticate peers that ask to, while it still takes those
	// that do not.
	EnableSASL bool
	// LearnerRequireSASL (quorum.auth.learnerRequireSasl) has the server
	// authenticate when it dials, with the learner section's username
	// and password, and go no further with a peer that does not
	// authenticate it (or cannot prove it knows the password).
	LearnerRequireSASL bool
	// ServerRequireSASL (quorum.auth.serverRequireSasl) refuses peers
	// that dial without authenticating.
	ServerRequireSASL bool
	// LearnerLoginContext and ServerLoginContext name the JAAS sections
	// (quorum.auth.learner.saslLoginContext and
	// quorum.auth.server.saslLoginContext); "" is QuorumLearner and
	// QuorumServer.
	LearnerLoginContext, ServerLoginContext string
	// ServicePrincipal is quorum.auth.kerberos.servicePrincipal: the
	// principal of Kerberos between servers, which Collie does not
	// implement; with DIGEST-MD5 ZooKeeper does not use it either.
	ServicePrincipal string
	// CnxnThreadsSize is quorum.cnxn.threads.size, ZooKeeper's pool of
	// threads that run exchanges; Collie runs each connection's on its
	// own goroutine, so it is accepted and changes nothing.
	CnxnThreadsSize int

	// Users are the user_<name> options of the server section, read by
	// Load when EnableSASL: the peers that may authenticate, and their
	// passwords.
	Users map[string]string
	// Username and Password are the learner section's username and
	// password options, read by Load when EnableSASL: what this server
	// authenticates with.
	Username, Password string
}

// The default JAAS sections of SASL between servers.
const (
	defaultQuorumLearnerSection = "QuorumLearner"
	defaultQuorumServerSection  = "QuorumServer"
)

// learnerSection is the JAAS section this server authenticates with.
func (q QuorumAuth) learnerSection() string {
	if q.LearnerLoginContext == "" {
		return defaultQuorumLearnerSection
	}
	return q.LearnerLoginContext
}

// serverSection is the JAAS section of the users this server
// authenticates.
func (q QuorumAuth) serverSection() string {
	if q.ServerLoginContext == "" {
		return defaultQuorumServerSection
	}
	return q.ServerLoginContext
}

// setQuorumAuth applies a key of SASL between servers and reports
// whether it was one. ZooKeeper reads them as zoo.cfg keys only, not as
// "zookeeper." system properties.
func (p *parser) setQuorumAuth(key, value string) bool {
	q := &p.c.QuorumAuth
	var err error
	switch key {
	case "quorum.auth.enableSasl":
		q.EnableSASL, err = boolean(key, value)
	case "quorum.auth.learnerRequireSasl":
		q.LearnerRequireSASL, err = boolean(key, value)
	case "quorum.auth.serverRequireSasl":
		q.ServerRequireSASL, err = boolean(key, value)
	case "quorum.auth.learner.saslLoginContext":
		q.LearnerLoginContext, err = nonEmpty(key, value, "a JAAS section name")
	case "quorum.auth.server.saslLoginContext":
		q.ServerLoginContext, err = nonEmpty(key, value, "a JAAS section name")
	case "quorum.auth.kerberos.servicePrincipal":
		q.ServicePrincipal = value
	case "quorum.cnxn.threads.size":
		q.CnxnThreadsSize, err = intIn(key, value, math.MinInt32, math.MaxInt32, "a number of threads")
	default:
		return false
	}
	if err != nil {
		p.errs = append(p.errs, err)
	}
	return true
}

// validateQuorumAuth checks the keys as ZooKeeper's QuorumPeerConfig
// does, in its words, and that Load found what they need in the JAAS
// file.
func (c Config) validateQuorumAuth() []error {
	q := c.QuorumAuth
	var errs []error
	if !q.EnableSASL && q.ServerRequireSASL {
		errs = append(errs, errors.New("quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.serverRequireSasl"))
	}
	if !q.EnableSASL && q.LearnerRequireSASL {
		errs = append(errs, errors.New("quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.learnerRequireSasl"))
	}
	// A server that requires peers to authenticate and does not itself
	// would be refused by every peer set as it is.
	if !q.LearnerRequireSASL && q.ServerRequireSASL {
		errs = append(errs, errors.New("quorum.auth.learnerRequireSasl is disabled, so cannot enable quorum.auth.serverRequireSasl"))
	}
	if !q.EnableSASL || c.Standalone {
		return errs
	}
	switch {
	case q.Users == nil && c.JAASConfigFile == "":
		errs = append(errs, fmt.Errorf("quorum.auth.enableSasl is true, but no JAAS file is named: set %s (or -D%s= in SERVER_JVMFLAGS) to the file with the %s and %s sections",
			jaasKey, jaasKey, q.serverSection(), q.learnerSection()))
	case q.Users == nil:
		errs = append(errs, fmt.Errorf("%s: no section %s (quorum.auth.server.saslLoginContext) with the users of SASL between servers", c.JAASConfigFile, q.serverSection()))
	case q.LearnerRequireSASL && q.Username == "":
		errs = append(errs, fmt.Errorf("%s: section %s (quorum.auth.learner.saslLoginContext) has no username and password for this server to authenticate with, which quorum.auth.learnerRequireSasl=true needs",
			c.JAASConfigFile, q.learnerSection()))
	}
	return errs
}

// load reads the sections of SASL between servers from the
// JAAS file's sections, when quorum.auth.enableSasl asks for them, as
// ZooKeeper's SaslQuorumAuthServer and SaslQuorumAuthLearner read them:
// the user_<name> options of the server section, and the username and
// password of the learner section's DigestLoginModule. Either section
// missing stops the start, as in ZooKeeper.
func (q *QuorumAuth) load(file string, sections map[string][]JAASModule) error {
	if !q.EnableSASL {
		return nil
	}
	server, ok := sections[q.serverSection()]
	if !ok {
		return fmt.Errorf("%s: no section %s (quorum.auth.server.saslLoginContext): quorum.auth.enableSasl=true needs it to authenticate the other servers", file, q.serverSection())
	}
	learner, ok := sections[q.learnerSection()]
	if !ok {
		return fmt.Errorf("%s: no section %s (quorum.auth.learner.saslLoginContext): quorum.auth.enableSasl=true needs it to authenticate to the other servers", file, q.learnerSection())
	}
	for _, m := range append(server, learner...) {
		if err := q.checkModule(m); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	q.Users = make(map[string]string)
	for _, m := range server {
		for k, v := range m.Options {
			if name, found := strings.CutPrefix(k, "user_"); found {
				q.Users[name] = v
			}
		}
	}
	for _, m := range learner {
		if user, ok := m.Options["username"]; ok && q.Username == "" {
			q.Username, q.Password = user, m.Options["password"]
		}
	}
	return nil
}

// checkModule refuses a login module of the quorum sections other than
// DigestLoginModule.
func (q *QuorumAuth) checkModule(m JAASModule) error {
	switch m.Class {
	case digestLoginModule:
		return nil
	case krb5LoginModule:
		principal := ""
		if q.ServicePrincipal != "" {
			principal = fmt.Sprintf(" (and quorum.auth.kerberos.servicePrincipal=%s with it)", q.ServicePrincipal)
		}
		return fmt.Errorf("the sections %s and %s use %s%s: Kerberos (GSSAPI) between servers is not implemented yet; use %s (DIGEST-MD5), or keep running ZooKeeper",
			q.serverSection(), q.learnerSection(), m.Class, principal, digestLoginModule)
	}
	return fmt.Errorf("login module %s of the sections %s and %s is not supported; Collie has %s", m.Class, q.serverSection(), q.learnerSection(), digestLoginModule)
}
