package conn

import "sync"

// outQueue is a connection's outbound frames. Pushing never blocks; the
// writer pops everything queued at once.
type outQueue struct {
	mu     sync.Mutex
	frames [][]byte
	bytes  int
	max    int
	closed bool
	// drain closes the queue once what is queued has been written.
	drain  bool
	signal chan struct{}
}

func (q *outQueue) init(max int) {
	q.max = max
	q.signal = make(chan struct{}, 1)
}

// push queues a frame; false when the queue is closed or over its limit.
func (q *outQueue) push(b []byte) bool {
	q.mu.Lock()
	if q.closed || q.drain {
		q.mu.Unlock()
		return q.drain
	}
	if q.bytes+len(b) > q.max {
		q.mu.Unlock()
		return false
	}
	q.frames = append(q.frames, b)
	q.bytes += len(b)
	q.mu.Unlock()
	q.wake()
	return true
}

func (q *outQueue) wake() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// pop waits for frames and returns them all; false once the queue is
// closed, or drained after closeAfterDrain.
func (q *outQueue) pop() ([][]byte, bool) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, false
		}
		if len(q.frames) > 0 {
			f := q.frames
			q.frames = nil
			q.bytes = 0
			q.mu.Unlock()
			return f, true
		}
		if q.drain {
			q.closed = true
			q.mu.Unlock()
			return nil, false
		}
		q.mu.Unlock()
		<-q.signal
	}
}

func (q *outQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wake()
}

// closeAfterDrain lets the writer finish what is queued, then close.
func (q *outQueue) closeAfterDrain() {
	q.mu.Lock()
	q.drain = true
	q.mu.Unlock()
	q.wake()
}

// draining reports whether closeAfterDrain was called.
func (q *outQueue) draining() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.drain
}
