package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/collie-io/collie/collietest"
	"github.com/collie-io/collie/server/config"
)

// An ensemble whose servers all require SASL between them elects a
// leader and serves writes through every member, the observer included;
// a server's conf and mntr show no password.
func TestEnsembleQuorumSASL(t *testing.T) {
	e := collietest.StartEnsemble(t, 3, 1, collietest.WithConfig(func(c *config.Config) {
		c.QuorumAuth = config.QuorumAuth{EnableSASL: true, LearnerRequireSASL: true, ServerRequireSASL: true,
			Users: map[string]string{"test": "quorumsecret"}, Username: "test", Password: "quorumsecret"}
		c.FourLetterWhitelist = map[string]bool{"conf": true, "mntr": true, "srvr": true, "envi": true}
	}))
	for i, s := range e.Servers() {
		c, _ := connect(t, s.Addr())
		if _, err := c.Create(fmt.Sprintf("/sasl%d", i+1), []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create through server %d: %v", i+1, err)
		}
	}
	for i, s := range e.Servers() {
		for _, word := range []string{"conf", "mntr", "envi"} {
			if out := fourLetter(t, s.Addr(), word); strings.Contains(out, "quorumsecret") {
				t.Errorf("server %d %s shows the password:\n%s", i+1, word, out)
			}
		}
	}
}
