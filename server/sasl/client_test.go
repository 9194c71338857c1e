package sasl

import (
	"errors"
	"strings"
	"testing"

	"github.com/collie-io/collie/client/digestmd5"
)

func clientOf(svc Service, user, password string) *digestmd5.Mechanism {
	return digestmd5.New(user, password, digestmd5.WithService(svc.Protocol, svc.ServerName))
}

// TestClientAgainstServer runs both sides of exchanges of each service,
// the client side being the one the Go client and the servers use.
func TestClientAgainstServer(t *testing.T) {
	for _, svc := range []Service{ClientService, QuorumService} {
		for _, tt := range []struct {
			name, user, password string
			wantErr              string // the server's refusal; "" when both complete
		}{
			{"right password", "test", "secret", ""},
			{"latin-1 password", "test", "sécret", ""},
			{"wrong password", "test", "guess", "wrong password"},
			{"unknown user", "mallory", "secret", `no user "mallory"`},
		} {
			t.Run(svc.Protocol+"/"+tt.name, func(t *testing.T) {
				passwords := users("test", "secret")
				if tt.name == "latin-1 password" {
					passwords = users("test", "sécret")
				}
				s := NewDigestMD5For(svc, passwords, fixedRand(1))
				c := clientOf(svc, tt.user, tt.password)
				challenge, err := s.Next(nil)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(challenge), `realm="`+svc.ServerName+`"`) {
					t.Errorf("challenge %s does not name realm %s", challenge, svc.ServerName)
				}
				response, err := c.Next(challenge)
				if err != nil {
					t.Fatalf("client response: %v", err)
				}
				if strings.Contains(string(response), tt.password) {
					t.Fatalf("the response shows the password: %s", response)
				}
				rspauth, err := s.Next(response)
				if tt.wantErr != "" {
					if !errors.Is(err, ErrAuthentication) || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("server: %v, want %q", err, tt.wantErr)
					}
					return
				}
				if err != nil || s.Username() != tt.user {
					t.Fatalf("server: %v, user %q", err, s.Username())
				}
				last, err := c.Next(rspauth)
				if err != nil || last != nil || !c.Complete() {
					t.Fatalf("client on rspauth: %q, %v, complete %v", last, err, c.Complete())
				}
				if _, err := c.Next(rspauth); !errors.Is(err, digestmd5.ErrMechanism) {
					t.Errorf("a token after the end: %v", err)
				}
			})
		}
	}
}

// TestServiceMismatch: a client of one service is refused by a server of
// the other, since the realm and digest-uri differ.
func TestServiceMismatch(t *testing.T) {
	s := NewDigestMD5For(ClientService, users("test", "secret"), fixedRand(1))
	challenge, _ := s.Next(nil)
	c := clientOf(QuorumService, "test", "secret")
	response, err := c.Next(challenge)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(response); !errors.Is(err, ErrAuthentication) || !strings.Contains(err.Error(), "digest-uri") {
		t.Errorf("a quorum client at the client port: %v", err)
	}
}
