package server

import (
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/tree"
)

// authSchemes are the ACL schemes beyond digest and ip that cfg gives
// providers for (authProvider.N).
func authSchemes(cfg config.Config) []string {
	var schemes []string
	if cfg.SASLAuthProvider {
		schemes = append(schemes, tree.SchemeSASL)
	}
	if cfg.X509Scheme() {
		schemes = append(schemes, tree.SchemeX509)
	}
	return schemes
}

// fsmOptions are the state machine's options from cfg.
func fsmOptions(cfg config.Config) fsm.Options {
	return fsm.Options{ExtendedTypes: cfg.ExtendedTypesEnabled, SASLScheme: cfg.SASLAuthProvider, X509Scheme: cfg.X509Scheme()}
}
