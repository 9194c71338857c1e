package session

import (
	"encoding/hex"
	"testing"
)

// TestZooKeeperPassword checks the passwords against those Java 17's
// java.util.Random gave for the same ids, as ZooKeeper 3.8 derives them.
func TestZooKeeperPassword(t *testing.T) {
	for _, c := range []struct {
		id   int64
		want string
	}{
		{0, "f22acd4a97e69d6d20a49bb638eadb38"},
		{1, "054cc74a37327db215e702e20c73f005"},
		{72057594037927936, "f22acd4a97e69d6d20a49bb638eadb38"},
		{-1, "20f62cb5648dc2d771471c8a2486a9ee"},
		{9223372036854775807, "20f62cb5648dc2d771471c8a2486a9ee"},
		{-9223372036854775808, "f22acd4a97e69d6d20a49bb638eadb38"},
		{1234567890123, "40b51d0074cd652e16c884a0cf746290"},
	} {
		got := hex.EncodeToString(ZooKeeperPassword(ID(c.id)))
		if got != c.want {
			t.Errorf("ZooKeeperPassword(%d) = %s, want %s", c.id, got, c.want)
		}
		want, _ := hex.DecodeString(c.want)
		if (c.id != 0) != CheckZooKeeperPassword(ID(c.id), want) {
			t.Errorf("CheckZooKeeperPassword(%d, its password) = %v", c.id, !(c.id != 0))
		}
		if CheckZooKeeperPassword(ID(c.id), make([]byte, PasswordLen)) {
			t.Errorf("CheckZooKeeperPassword(%d, zeros) = true", c.id)
		}
	}
}
