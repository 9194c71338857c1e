package conn

import "github.com/collie-io/collie/proto"

// This file keeps a session's requests in the order the client sent them.
//
// ZooKeeper's first guarantee is that the requests of a session take
// effect in the order they were sent, reads included, however many the
// client pipelines: the reply to request i shows every earlier request of
// the session and no later one, a watch set by request i is in place before
// request i+1 takes effect, and an event reaches the client after the
// replies to every request of the session ordered before the change.
//
// Writes are proposed as they arrive and take their place in the log. What
// does not go through the log takes its place between two writes: a
// request that arrives while nothing of its session is pending is answered
// at once from the state as it is (the session's earlier writes are all
// applied; its later ones are not sent yet). One that arrives behind a
// pending write is answered in the apply goroutine at that write's apply
// point, after the write's reply and before the next entry is applied
// (Backend.Write hands done a Reader for this). So nothing ever waits for
// a later write, and a later write never overtakes an earlier read.
//
// A sync, and a read when reads are linearizable, must also reflect every
// write committed anywhere before it arrived: it waits for a ReadIndex
// (Backend.Sync), and is answered at its turn once the state is past that
// index. A later write of the session is not proposed until then, or it
// could land before the index and be seen by the read.
//
// Who runs what:
//   - process (the connection's processor goroutine) admits requests in
//     order, answers those with nothing pending before them, and proposes
//     writes, in order: it is the only goroutine that proposes, so the log
//     receives a session's writes in the order they were sent.
//   - the apply goroutine, through a Write's done or a Sync's done, marks
//     the request done and answers from the head of pending as far as it
//     can (drain).
//   - any goroutine may end the pipeline when an outcome is unknown.
//
// pmu guards pending and the counters below it; it is taken after the
// Backend's state lock (the apply goroutine holds that while it drains)
// and never held while calling into the Backend's Write or Sync.

// kind says how a request is answered.
type kind uint8

const (
	// answered requests got their reply when they arrived (an unknown
	// opcode, a write refused to a read-only session); they only wait
	// for their turn.
	answered kind = iota
	// local requests are answered from the state at their turn: reads,
	// watches, whoAmI, ping.
	local
	// indexed requests are answered from the state at their turn once a
	// ReadIndex has come back: sync, and reads when reads are
	// linearizable.
	indexed
	// write requests go through the log.
	write
)

// item is one request in the session's pipeline.
type item struct {
	xid   int32
	op    proto.OpCode
	req   proto.Record
	body  []byte // a write's body as the client sent it
	auth  []proto.ID
	kind  kind
	start int64 // nanotime of arrival, for latency
	// proposed is set once a write is handed to the Backend.
	proposed bool
	// ready: a write is applied (reply holds its result); an indexed
	// request's index is reached.
	ready bool
	reply Reply
}

// admit takes a request in arrival order. Called by process only.
func (c *Conn) admit(it *item) {
	c.pmu.Lock()
	if c.ended {
		c.pmu.Unlock()
		<-c.slots
		return
	}
	if len(c.pending) == 0 && (it.kind == answered || it.kind == local) {
		// Nothing of the session is pending: the state already shows
		// every earlier request, and no later one is sent. Only process
		// adds to pending, so it stays empty until this is answered.
		c.pmu.Unlock()
		if it.kind == answered {
			c.pmu.Lock()
			c.answer(it)
			c.pmu.Unlock()
			return
		}
		c.backend.View(func(rd Reader) {
			c.pmu.Lock()
			defer c.pmu.Unlock()
			if c.ended {
				return
			}
			it.reply = rd.Read(c, it.op, it.req, it.auth)
			c.answer(it)
		})
		return
	}
	c.pending = append(c.pending, it)
	switch it.kind {
	case indexed:
		c.unindexed++
		c.pmu.Unlock()
		c.backend.Sync(c, func(rd Reader, err error) { c.indexReached(it, rd, err) })
		return
	case write:
		if c.unindexed > 0 || c.held > 0 {
			// An earlier sync or linearizable read has no index yet:
			// proposeHeld sends this once it has.
			c.held++
			c.pmu.Unlock()
			return
		}
		it.proposed = true
		c.pmu.Unlock()
		c.propose(it)
		return
	}
	c.pmu.Unlock()
}

// propose hands a write to the Backend. Called by process only, in
// request order.
func (c *Conn) propose(it *item) {
	c.backend.Write(c, it.op, it.body, it.auth, func(r Reply, rd Reader) { c.applied(it, r, rd) })
}

// proposeHeld proposes the writes held behind indexed requests that have
// their index now, in order. Called by process only.
func (c *Conn) proposeHeld() {
	c.pmu.Lock()
	if c.held == 0 || c.ended {
		c.pmu.Unlock()
		return
	}
	var batch []*item
	for _, it := range c.pending {
		if it.kind == indexed && !it.ready {
			break
		}
		if it.kind == write && !it.proposed {
			it.proposed = true
			c.held--
			batch = append(batch, it)
		}
	}
	c.pmu.Unlock()
	for _, it := range batch {
		c.propose(it)
	}
}

// applied is a write's done. With a Reader it runs in the apply goroutine
// at the write's apply point, or in process when the write was refused
// before it reached the log (it then has no effect, and the requests
// behind it are answered from the state as it is); without one the
// outcome of the write is unknown.
func (c *Conn) applied(it *item, r Reply, rd Reader) {
	if rd == nil {
		c.unknownOutcome(it.xid)
		return
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.ended {
		return
	}
	it.ready, it.reply = true, r
	c.drain(rd)
}

// indexReached is an indexed request's Sync done.
func (c *Conn) indexReached(it *item, rd Reader, err error) {
	if err != nil {
		c.unknownOutcome(it.xid)
		return
	}
	c.pmu.Lock()
	if c.ended {
		c.pmu.Unlock()
		return
	}
	it.ready = true
	c.unindexed--
	c.drain(rd)
	release := c.held > 0
	c.pmu.Unlock()
	if release {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// unknownOutcome ends the connection: a request's outcome cannot be known
// (its proposal or ReadIndex was lost with a leader). ZooKeeper never
// answers with ConnectionLoss; the client, which keeps its session, learns
// it the only way ZooKeeper clients do.
func (c *Conn) unknownOutcome(xid int32) {
	c.pmu.Lock()
	c.end()
	c.pmu.Unlock()
	c.log.Debug("closing connection: outcome of a request unknown", "session", sessionHex(c.session), "xid", xid)
	c.Close()
}

// drain answers from the head of pending while the head can be answered,
// reading the state through rd. Called with pmu held.
func (c *Conn) drain(rd Reader) {
	for len(c.pending) > 0 && !c.ended {
		it := c.pending[0]
		switch it.kind {
		case write, indexed:
			if !it.ready {
				return
			}
		}
		if it.kind == local || it.kind == indexed {
			it.reply = rd.Read(c, it.op, it.req, it.auth)
		}
		c.pending[0] = nil
		c.pending = c.pending[1:]
		c.answer(it)
	}
}

// answer sends an item's reply and frees its slot. Called with pmu held.
func (c *Conn) answer(it *item) {
	<-c.slots
	if !c.reply(it) || it.reply.Close {
		c.end()
		if it.reply.Close {
			c.out.closeAfterDrain()
		}
	}
}

// end stops the pipeline: nothing more is answered or proposed. Called
// with pmu held.
func (c *Conn) end() {
	if c.ended {
		return
	}
	c.ended = true
	for range c.pending {
		<-c.slots
	}
	clear(c.pending)
	c.pending = nil
}
