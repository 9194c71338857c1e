package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/client/digestmd5"
	"github.com/collie-io/collie/server/config"
)

// saslFlags are the SASL flags of collie cli and collie bench. Without
// any, the login comes as zkCli.sh takes it: from the JAAS file that
// -Djava.security.auth.login.config names in CLIENT_JVMFLAGS or JVMFLAGS,
// its section Client (or -Dzookeeper.sasl.clientconfig's), unless
// -Dzookeeper.sasl.client=false. -jaas names the file instead, and
// -sasl-user with a password gives the login directly.
type saslFlags struct {
	jaas         string
	section      string
	user         string
	password     string
	passwordFile string
}

// clientJVMFlags are the environment variables zkCli.sh puts on java's
// command line, in that order.
var clientJVMFlags = []string{"CLIENT_JVMFLAGS", "JVMFLAGS"}

const (
	saslClientSectionProperty = "zookeeper.sasl.clientconfig"
	saslClientProperty        = "zookeeper.sasl.client"
)

func (f *saslFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.jaas, "jaas", "", "JAAS `file` whose client section holds the SASL login (DigestLoginModule username and password); default: -D"+config.JAASProperty+" in CLIENT_JVMFLAGS or JVMFLAGS")
	fs.StringVar(&f.section, "sasl-config", "", "the JAAS `section` of the login ("+saslClientSectionProperty+"); default "+config.DefaultSASLClientSection)
	fs.StringVar(&f.user, "sasl-user", "", "SASL DIGEST-MD5 user `name`, with -sasl-password-file (instead of a JAAS file)")
	fs.StringVar(&f.passwordFile, "sasl-password-file", "", "`file` holding -sasl-user's password (its first line)")
	fs.StringVar(&f.password, "sasl-password", "", "-sasl-user's password; visible to other users in the process list, see -sasl-password-file")
}

// mechanism returns the SASL mechanism the flags and the environment ask
// for, or nil when they ask for none. Warnings (a JAAS file from the
// environment without the section, as zkCli.sh logs it and goes on
// without SASL) go to stderr.
func (f *saslFlags) mechanism(getenv func(string) string, stderr io.Writer) (func() client.SASLMechanism, error) {
	if f.user != "" {
		if f.jaas != "" {
			return nil, fmt.Errorf("-sasl-user and -jaas both give the SASL login: use one")
		}
		if (f.password == "") == (f.passwordFile == "") {
			return nil, fmt.Errorf("-sasl-user needs one of -sasl-password-file and -sasl-password")
		}
		password := f.password
		if f.passwordFile != "" {
			b, err := os.ReadFile(f.passwordFile)
			if err != nil {
				return nil, fmt.Errorf("-sasl-password-file: %w", err)
			}
			password, _, _ = strings.Cut(string(b), "\n")
			password = strings.TrimSuffix(password, "\r")
		}
		return digestLogin(f.user, password), nil
	}
	if f.password != "" || f.passwordFile != "" {
		return nil, fmt.Errorf("-sasl-password and -sasl-password-file go with -sasl-user")
	}
	path, fromEnv := f.jaas, false
	if path == "" {
		if v, _ := config.JVMProperty(getenv, saslClientProperty, clientJVMFlags...); strings.EqualFold(v, "false") {
			return nil, nil
		}
		v, ok := config.JVMProperty(getenv, config.JAASProperty, clientJVMFlags...)
		if !ok {
			return nil, nil
		}
		path, fromEnv = config.JAASPath(v), true
	}
	section := f.section
	if section == "" {
		section, _ = config.JVMProperty(getenv, saslClientSectionProperty, clientJVMFlags...)
	}
	if section == "" {
		section = config.DefaultSASLClientSection
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("JAAS file: %w", err)
	}
	sections, err := config.ParseJAAS(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	user, password, ok, err := config.SASLClientLogin(sections, section)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !ok {
		if fromEnv && f.section == "" {
			fmt.Fprintf(stderr, "warning: %s has no JAAS section %s: connecting without SASL\n", path, section)
			return nil, nil
		}
		return nil, fmt.Errorf("%s has no JAAS section %s", path, section)
	}
	return digestLogin(user, password), nil
}

func digestLogin(user, password string) func() client.SASLMechanism {
	return func() client.SASLMechanism { return digestmd5.New(user, password) }
}
