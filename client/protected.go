package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/collie-io/collie/proto"
)

// ProtectedPrefix starts the name of a node made by CreateProtected:
// "_c_" + a random UUID + "-" + the requested name, as Curator's
// protection mode names it, so that Curator and this client recognize
// each other's nodes.
const ProtectedPrefix = "_c_"

// CreateProtected creates a node whose name carries a random id, so that a
// create whose reply was lost can be found again: path "/locks/lock-"
// becomes "/locks/_c_4e8f2d1a-0b3c-4d5e-9f60-718293a4b5c6-lock-" (then a
// sequence number for a sequential mode). When the create fails with
// ErrConnectionLoss, CreateProtected syncs and lists the parent once
// connected again; if the node is there it is returned, otherwise the
// create is sent again, paced by Config.Retry (by default, exponential
// backoff until ctx ends or the session expires).
//
// Use it for sequential and ephemeral nodes (locks, elections, queues),
// where a blind retry would make a second node.
func (c *Client) CreateProtected(ctx context.Context, path string, data []byte, mode CreateMode, acl []ACL) (string, Stat, error) {
	parent, name := splitProtected(path)
	prefix := ProtectedPrefix + newUUID() + "-"
	protected := proto.Join(parent, prefix+name)
	policy := c.cfg.Retry
	if policy == nil {
		policy = defaultRetry
	}
	// uncertain: an attempt may have created the node without its reply
	// arriving. Until a search settles that, no other create is sent: a
	// second sequential node would be left behind by the first.
	uncertain := false
	var err error
	for n := 1; ; n++ {
		if uncertain {
			found, stat, ferr := c.findProtected(ctx, parent, prefix)
			switch {
			case ferr == nil && found != "":
				return found, stat, nil
			case ferr == nil:
				uncertain = false
			case !Retryable(ferr):
				return "", Stat{}, ferr
			}
		}
		if !uncertain {
			var created string
			var stat Stat
			created, stat, err = c.Create(ctx, protected, data, mode, acl)
			switch {
			case err == nil:
				return created, stat, nil
			case n > 1 && errors.Is(err, ErrNodeExists) && !mode.Sequential():
				// An earlier attempt created it after all.
				if ok, stat, err := c.Exists(ctx, protected); err == nil && ok {
					return protected, stat, nil
				}
				return "", Stat{}, err
			case !Retryable(err):
				return "", Stat{}, err
			}
			if errors.Is(err, ErrConnectionLoss) {
				uncertain = true
				continue
			}
		}
		delay, ok := policy.Delay(n)
		if !ok {
			return "", Stat{}, err
		}
		if serr := sleepCtx(ctx, delay); serr != nil {
			return "", Stat{}, err
		}
	}
}

// findProtected looks for the child of parent whose name starts with
// prefix. It syncs first, so that the listing includes a create that
// reached the ensemble through another server before the connection
// broke.
func (c *Client) findProtected(ctx context.Context, parent, prefix string) (string, Stat, error) {
	if err := c.Sync(ctx, parent); err != nil {
		return "", Stat{}, err
	}
	children, _, err := c.Children(ctx, parent)
	if err != nil {
		return "", Stat{}, err
	}
	for _, name := range children {
		if strings.HasPrefix(name, prefix) {
			p := proto.Join(parent, name)
			ok, stat, err := c.Exists(ctx, p)
			if err != nil || !ok {
				return "", Stat{}, err
			}
			return p, stat, nil
		}
	}
	return "", Stat{}, nil
}

// splitProtected splits a path at its last slash: "/a/b-" gives "/a" and
// "b-", and "/a/" (a sequential node named by its number alone) gives "/a"
// and "".
func splitProtected(path string) (parent, name string) {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/", path[i+1:]
	}
	return path[:i], path[i+1:]
}

// IsProtected reports whether a node name was made by CreateProtected (or
// Curator's protection mode), and returns the name without the prefix.
func IsProtected(name string) (rest string, ok bool) {
	const idLen = 36 + 1 // a UUID and the separator
	if !strings.HasPrefix(name, ProtectedPrefix) || len(name) < len(ProtectedPrefix)+idLen || name[len(ProtectedPrefix)+36] != '-' {
		return name, false
	}
	return name[len(ProtectedPrefix)+idLen:], true
}

// newUUID returns a random (version 4) UUID in its 8-4-4-4-12 hex form.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:])
}
