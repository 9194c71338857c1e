package client

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/collie-io/collie/proto"
)

// The life of a call. The caller pushes it (queued); the writer claims it
// before writing it (sent); whoever completes it, the reader with the reply
// or the session loop with a failure, marks it done and then signals. A
// caller that gives up (its context ended) marks it abandoned and never
// touches it again; a completer that finds it abandoned drops it. Every
// transition is a compare-and-swap, so exactly one side wins each race.
const (
	callQueued int32 = iota
	callSent
	callDone
	callAbandoned
)

// call is one request and, once done, its outcome. Calls are pooled: the
// hot operations encode into a reused buffer and decode into response
// records embedded here, so they allocate only what they return.
type call struct {
	state atomic.Int32
	done  chan struct{} // capacity 1; one signal per completion

	xid int32
	op  proto.OpCode
	buf []byte // the frame: length, RequestHeader, body
	enc proto.Encoder

	// Set before the call is pushed.
	resp       proto.Record // decoded from an OK reply (and a failed multi's)
	idempotent bool         // sending it twice changes nothing: Config.Retry may
	noWait     bool         // nobody waits: completion only runs the hooks
	watch      watchReq     // the watch the reply sets or removes
	auth       *Auth        // credentials to keep for later connections on success

	// Written by the completer before done is signalled.
	code proto.Code // the server's answer
	err  error      // a local failure: connection loss, closed, expired

	// Response records reused from request to request.
	stat     proto.Stat
	data     proto.GetDataResponse
	created  proto.Create2Response
	children proto.GetChildren2Response
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// maxPooledBuffer bounds the buffers kept in the pool, so one large
// request does not pin its memory for the life of the process.
const maxPooledBuffer = 64 << 10

// newCall returns a call whose frame holds the header; the caller encodes
// the body into the returned encoder and then calls seal.
func newCall(xid int32, op proto.OpCode) (*call, *proto.Encoder) {
	cl := callPool.Get().(*call)
	cl.xid, cl.op = xid, op
	cl.enc = *proto.NewEncoder(cl.buf[:0])
	cl.enc.Int(0) // the frame length, set by seal
	hdr := proto.RequestHeader{Xid: xid, Type: op}
	hdr.Encode(&cl.enc)
	return cl, &cl.enc
}

// seal finishes the frame.
func (cl *call) seal() {
	cl.buf = cl.enc.Bytes()
	binary.BigEndian.PutUint32(cl.buf, uint32(len(cl.buf)-4))
}

// renumber gives a call that failed a new xid before it is sent again.
func (cl *call) renumber(xid int32) {
	cl.xid = xid
	binary.BigEndian.PutUint32(cl.buf[4:], uint32(xid))
}

// release returns a completed call to the pool. Never call it on an
// abandoned call: the writer or reader may still hold it.
func (cl *call) release() {
	cl.resp, cl.watch, cl.auth = nil, watchReq{}, nil
	cl.idempotent, cl.noWait = false, false
	cl.code, cl.err = proto.OK, nil
	cl.data, cl.created, cl.children = proto.GetDataResponse{}, proto.Create2Response{}, proto.GetChildren2Response{}
	cl.enc = proto.Encoder{}
	if cap(cl.buf) > maxPooledBuffer {
		cl.buf = nil
	}
	callPool.Put(cl)
}

// complete marks a call done and signals its caller. It reports false when
// the caller has abandoned it (or nobody waits), so the hooks must not run.
func (cl *call) complete(from int32) bool {
	if !cl.state.CompareAndSwap(from, callDone) {
		return false
	}
	if !cl.noWait {
		cl.done <- struct{}{}
	}
	return true
}

// fail completes a call with a local error.
func (cl *call) fail(from int32, err error) {
	cl.err = err
	cl.complete(from)
}

// result is the call's outcome as an error: nil, a local failure or the
// server's code.
func (cl *call) result() error {
	if cl.err != nil {
		return cl.err
	}
	return cl.code.Err()
}

// sendQueue holds the calls waiting for the writer of the live connection,
// in the order they were made. It is not bounded: each waiting caller has
// one call in it.
type sendQueue struct {
	mu    sync.Mutex
	calls []*call
	err   error // when set, push refuses calls with it

	wake chan struct{} // capacity 1: calls were pushed
}

func (q *sendQueue) init() { q.wake = make(chan struct{}, 1) }

func (q *sendQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// push queues cl, or returns why no call is accepted now.
func (q *sendQueue) push(cl *call) error {
	q.mu.Lock()
	if q.err != nil {
		err := q.err
		q.mu.Unlock()
		return err
	}
	cl.state.Store(callQueued)
	q.calls = append(q.calls, cl)
	q.mu.Unlock()
	q.signal()
	return nil
}

// pushLast queues cl as the last call accepted: every later push fails
// with err.
func (q *sendQueue) pushLast(cl *call, err error) error {
	q.mu.Lock()
	defer q.signal()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	cl.state.Store(callQueued)
	q.calls = append(q.calls, cl)
	q.err = err
	return nil
}

// requeue puts calls that were taken but never written back at the front.
func (q *sendQueue) requeue(calls []*call) {
	q.mu.Lock()
	if q.err != nil {
		err := q.err
		q.mu.Unlock()
		for _, cl := range calls {
			cl.fail(callQueued, err)
		}
		return
	}
	q.calls = append(calls[:len(calls):len(calls)], q.calls...)
	q.mu.Unlock()
	q.signal()
}

// take returns the queued calls and keeps spare, emptied, as the queue's
// next buffer, so a writer and the queue trade two slices back and forth.
func (q *sendQueue) take(spare []*call) []*call {
	q.mu.Lock()
	calls := q.calls
	q.calls = spare[:0]
	q.mu.Unlock()
	return calls
}

// refuse makes push fail with err from now on and fails the queued calls
// with it.
func (q *sendQueue) refuse(err error) {
	q.mu.Lock()
	q.err = err
	calls := q.calls
	q.calls = nil
	q.mu.Unlock()
	for _, cl := range calls {
		cl.fail(callQueued, err)
	}
}

// reopen accepts calls again after refuse, unless err is the lasting
// reason (the client closed).
func (q *sendQueue) reopen(unless error) {
	q.mu.Lock()
	if q.err != unless {
		q.err = nil
	}
	q.mu.Unlock()
}

// fifo is a queue of calls in the order they were written.
type fifo struct {
	items []*call
	head  int
}

func (f *fifo) len() int { return len(f.items) - f.head }

func (f *fifo) push(cl *call) { f.items = append(f.items, cl) }

func (f *fifo) pop() *call {
	if f.head == len(f.items) {
		return nil
	}
	cl := f.items[f.head]
	f.items[f.head] = nil
	f.head++
	switch {
	case f.head == len(f.items):
		f.items, f.head = f.items[:0], 0
	case f.head >= 64 && 2*f.head >= len(f.items):
		// Under steady pipelining the queue may never drain; reclaim the
		// front instead of letting append grow the slice forever.
		n := copy(f.items, f.items[f.head:])
		clear(f.items[n:])
		f.items, f.head = f.items[:n], 0
	}
	return cl
}

// dropLast removes the newest call, which must be cl.
func (f *fifo) dropLast(cl *call) bool {
	if f.len() == 0 || f.items[len(f.items)-1] != cl {
		return false
	}
	f.items[len(f.items)-1] = nil
	f.items = f.items[:len(f.items)-1]
	return true
}

// pending holds the calls a connection has written and not yet had
// answered. Replies to requests come in the order the requests were sent,
// but a server answers auth packets at once, ahead of requests still in
// its pipeline, so they and the setWatches packets (which share a reserved
// xid too) have queues of their own.
type pending struct {
	mu        sync.Mutex
	requests  fifo
	auths     fifo // xid -4
	setWatchs fifo // xid -8
}

func (p *pending) queueOf(xid int32) *fifo {
	switch xid {
	case proto.XidAuth:
		return &p.auths
	case proto.XidSetWatches:
		return &p.setWatchs
	}
	return &p.requests
}

func (p *pending) push(calls []*call) {
	p.mu.Lock()
	for _, cl := range calls {
		p.queueOf(cl.xid).push(cl)
	}
	p.mu.Unlock()
}

// pop returns the oldest call written with xid's queue, and how many
// setWatches packets are still unanswered after it.
func (p *pending) pop(xid int32) (cl *call, setWatchesLeft int) {
	p.mu.Lock()
	cl = p.queueOf(xid).pop()
	n := p.setWatchs.len()
	p.mu.Unlock()
	return cl, n
}

// unwrite removes calls, newest last, that were pushed but never written.
func (p *pending) unwrite(calls []*call) {
	p.mu.Lock()
	for i := len(calls) - 1; i >= 0; i-- {
		p.queueOf(calls[i].xid).dropLast(calls[i])
	}
	p.mu.Unlock()
}

// drain removes and returns every call; the connection is gone.
func (p *pending) drain() []*call {
	p.mu.Lock()
	defer p.mu.Unlock()
	var all []*call
	for _, f := range []*fifo{&p.requests, &p.auths, &p.setWatchs} {
		for cl := f.pop(); cl != nil; cl = f.pop() {
			all = append(all, cl)
		}
	}
	return all
}
