package tlsconfig_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/collie-io/collie/server/tlsconfig"
)

func TestPasswordsAreNeverPrinted(t *testing.T) {
	s := tlsconfig.Settings{
		KeyStore:   tlsconfig.Store{Location: "/k.jks", Password: "key-store-secret"},
		TrustStore: tlsconfig.Store{Location: "/t.jks", Password: "trust-store-secret"},
	}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("tls", "settings", s, "store", s.KeyStore)
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("tls", "store", s.KeyStore)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s), fmt.Sprint(s.KeyStore), logged.String()} {
		if strings.Contains(out, "secret") {
			t.Errorf("a password shows: %s", out)
		}
		if !strings.Contains(out, "/k.jks") {
			t.Errorf("the store's location does not show: %s", out)
		}
	}
}
