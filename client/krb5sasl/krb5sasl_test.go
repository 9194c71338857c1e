package krb5sasl

import "testing"

// TestServicePrincipal names the service as ZooKeeper's Java client does.
func TestServicePrincipal(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		host string
		want string
	}{
		{Config{}, "127.0.0.1", "zookeeper/localhost"}, // the address maps back to its name
		{Config{NoCanonicalize: true}, "127.0.0.1", "zookeeper/127.0.0.1"},
		{Config{ServiceName: "zk", NoCanonicalize: true}, "zk1.example", "zk/zk1.example"},
		{Config{ServerPrincipal: "zookeeper/fixed"}, "127.0.0.1", "zookeeper/fixed"},
		{Config{}, "no-such-host.invalid", "zookeeper/no-such-host.invalid"},
	} {
		c := &Client{cfg: tt.cfg}
		if got := c.servicePrincipal(tt.host); got != tt.want {
			t.Errorf("%+v, host %s: %s, want %s", tt.cfg, tt.host, got, tt.want)
		}
	}
}
