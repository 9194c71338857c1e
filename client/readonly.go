package client

import (
	"context"
	"errors"
	"io"
	"slices"
	"time"
)

// The pace of the search for a server with a leader while connected
// read-only: ZooKeeper's client starts at 100 ms and doubles up to a
// minute; so does this one.
const (
	firstReadWriteProbe = 100 * time.Millisecond
	maxReadWriteProbe   = time.Minute
)

// errFoundReadWrite ends a read-only connection when a server with a
// leader has been found: the client moves to it.
var errFoundReadWrite = errors.New("moving to a server that serves writes")

// seekReadWrite asks the other servers, in turn and ever less often,
// whether they serve writes (the isro four-letter word answers "rw"), for
// as long as cn is a read-only server's connection. On the first that
// does, it ends cn and has the session loop connect there next.
func (c *Client) seekReadWrite(cn *conn) {
	delay := firstReadWriteProbe
	for {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-cn.dead:
			t.Stop()
			return
		}
		delay = min(delay*2, maxReadWriteProbe)
		for i, addr := range c.servers {
			if addr == cn.addr {
				continue
			}
			if c.servesWrites(cn, addr) {
				c.mu.Lock()
				c.preferred = i
				c.mu.Unlock()
				c.log.Info("found a server with a leader: leaving the read-only one", "peer", cn.addr, "next", addr)
				cn.kill(errFoundReadWrite)
				return
			}
			select {
			case <-cn.dead:
				return
			default:
			}
		}
	}
}

// servesWrites sends isro to addr and reports whether it answered "rw".
// The probe ends early when cn does.
func (c *Client) servesWrites(cn *conn, addr string) bool {
	ctx, cancel := context.WithTimeout(c.ctx, max(c.timeout/time.Duration(len(c.servers)), minConnectTimeout))
	defer cancel()
	go func() {
		select {
		case <-cn.dead:
			cancel()
		case <-ctx.Done():
		}
	}()
	nc, err := c.cfg.Dial(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer nc.Close()
	deadline, _ := ctx.Deadline()
	nc.SetDeadline(deadline)
	context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	if _, err := nc.Write([]byte("isro")); err != nil {
		return false
	}
	answer, _ := io.ReadAll(io.LimitReader(nc, 16))
	return slices.Equal(answer, []byte("rw"))
}
