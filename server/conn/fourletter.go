package conn

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/collie-io/collie/proto"
)

// fourLetterWords are the commands ZooKeeper 3.8 answers on the client port
// in place of a connect request.
var fourLetterWords = map[string]bool{
	"ruok": true, "srvr": true, "stat": true, "mntr": true, "cons": true,
	"envi": true, "conf": true, "wchs": true, "wchc": true, "wchp": true,
	"dump": true, "dirs": true, "isro": true, "srst": true, "crst": true,
	"gtmk": true, "stmk": true, "hash": true,
}

func isFourLetter(cmd string) bool { return fourLetterWords[cmd] }

// fourLetter answers a four-letter word and closes the connection, as
// ZooKeeper does.
func (c *Conn) fourLetter(cmd string) {
	c.nc.SetWriteDeadline(time.Now().Add(c.cfg.HandshakeTimeout))
	// The read deadline of the handshake still holds.
	arg := func() (int64, bool) {
		var b [8]byte
		if _, err := io.ReadFull(c.nc, b[:]); err != nil {
			return 0, false
		}
		return int64(binary.BigEndian.Uint64(b[:])), true
	}
	if text, ok := c.backend.FourLetter(cmd, arg); ok {
		c.nc.Write([]byte(text))
	} else {
		fmt.Fprintf(c.nc, "%s is not executed because it is not in the whitelist.\n", cmd)
	}
}

// ConsLine describes the connection as the cons four-letter word prints
// it.
func (c *Conn) ConsLine() string {
	s := &c.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	queued := len(c.slots)
	if c.session == 0 {
		return fmt.Sprintf(" %s[0](queued=%d,recved=%d,sent=%d)\n", formatAddr(c.nc.RemoteAddr().String()), queued, s.Received, s.Sent)
	}
	line := fmt.Sprintf(" %s[1](queued=%d,recved=%d,sent=%d", formatAddr(c.nc.RemoteAddr().String()), queued, s.Received, s.Sent)
	avg := time.Duration(0)
	if s.completed > 0 {
		avg = s.totalLatency / time.Duration(s.completed)
	}
	lop := s.LastOp
	if lop == "" {
		lop = "NA"
	}
	return line + fmt.Sprintf(",sid=%s,lop=%s,est=%d,to=%d,lcxid=0x%x,lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d)\n",
		sessionHex(c.session), lop, c.started.UnixMilli(), c.timeout.Milliseconds(), uint32(s.LastCxid), uint64(s.LastZxid),
		time.Now().UnixMilli(), s.LastLatency.Milliseconds(), s.MinLatency.Milliseconds(), avg.Milliseconds(), s.MaxLatency.Milliseconds())
}

// shortOp is the four-letter name ZooKeeper's cons shows for the last
// operation of a connection.
var shortOp = map[proto.OpCode]string{
	proto.OpPing: "PING", proto.OpCreateSession: "SESS", proto.OpMulti: "MULT", proto.OpMultiRead: "MLTR",
	proto.OpCreate: "CREA", proto.OpCreate2: "CREA", proto.OpCreateTTL: "CREA", proto.OpCreateContainer: "CREA",
	proto.OpDelete: "DELE", proto.OpDeleteContainer: "DELE", proto.OpSetData: "SETD", proto.OpReconfig: "RECO",
	proto.OpSetACL: "SETA", proto.OpCloseSession: "CLOS", proto.OpSync: "SYNC", proto.OpCheck: "CHEC",
	proto.OpExists: "EXIS", proto.OpGetData: "GETD", proto.OpSetWatches: "SETW", proto.OpSetWatches2: "STW2",
	proto.OpAddWatch: "ADDW", proto.OpGetACL: "GETA", proto.OpGetChildren: "GETC", proto.OpGetChildren2: "GETC",
	proto.OpGetAllChildrenNumber: "GETACN", proto.OpCheckWatches: "CHKW", proto.OpRemoveWatches: "REMW",
	proto.OpWhoAmI: "HOMI", proto.OpGetEphemerals: "GETE",
}

// ResetStats clears the connection's counters (crst, srst).
func (c *Conn) ResetStats() {
	s := &c.stats
	s.mu.Lock()
	s.Received, s.Sent, s.completed = 0, 0, 0
	s.MinLatency, s.MaxLatency, s.totalLatency, s.LastLatency = 0, 0, 0, 0
	s.mu.Unlock()
}

// Counts returns the packets received and sent.
func (c *Conn) Counts() (received, sent int64) {
	c.stats.mu.Lock()
	defer c.stats.mu.Unlock()
	return c.stats.Received, c.stats.Sent
}

// Outstanding returns the requests in flight.
func (c *Conn) Outstanding() int { return len(c.slots) }

func formatAddr(addr string) string { return "/" + addr }
