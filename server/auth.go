package server

import (
	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/fsm"
	"github.com/collie-io/collie/server/tree"
)

// authSchemes are the ACL schemes beyond digest and ip that cfg gives
// providers for (authProvider.N).
func authSchemes(cfg config.Config) []string {
	if cfg.SASLAuthProvider {
		return []string{tree.SchemeSASL}
	}
	return nil
}

// fsmOptions are the state machine's options from cfg.
func fsmOptions(cfg config.Config) fsm.Options {
	return fsm.Options{ExtendedTypes: cfg.ExtendedTypesEnabled, SASLScheme: cfg.SASLAuthProvider}
}
