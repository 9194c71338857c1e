package client

import "sync"

// Stream delivers values in the order they happened, from the client's
// reader to one consumer, with a queue of its own between the two: the
// client never blocks on a slow consumer and never drops a value for it.
// The queue grows while the consumer lags; read it or close it.
//
// A Stream's channel is closed when the stream ends: after its last value
// when the session expires, or at once (values not yet received are
// dropped) on Close of the stream or of the client.
type Stream[T any] struct {
	out chan T

	mu    sync.Mutex // guards queue, head and ended
	queue []T        // values not yet handed to out; queue[head:] are live
	head  int
	ended bool // no value will be pushed any more

	wake     chan struct{} // capacity 1: a value or the end was pushed
	stop     chan struct{} // closed by halt: drop what is queued and exit
	stopOnce sync.Once
	exited   chan struct{} // closed when the forwarding goroutine has returned
	onClose  func()        // unregisters the stream from its owner; set before it is shared
}

func newStream[T any]() *Stream[T] {
	return &Stream[T]{
		out:    make(chan T),
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		exited: make(chan struct{}),
	}
}

// Events returns the channel of the stream's values.
func (s *Stream[T]) Events() <-chan T { return s.out }

// Close ends the stream: its channel is closed, values not yet received are
// dropped, and the watch or subscription behind it is removed. Safe to call
// more than once and from any goroutine, including while ranging over
// Events.
func (s *Stream[T]) Close() {
	first := false
	s.stopOnce.Do(func() {
		first = true
		close(s.stop)
	})
	if first && s.onClose != nil {
		s.onClose()
	}
	<-s.exited
}

// halt stops the stream without running onClose: its owner is removing it.
func (s *Stream[T]) halt() {
	s.stopOnce.Do(func() { close(s.stop) })
}

// push queues v. It never blocks. It reports false when the stream has
// ended.
func (s *Stream[T]) push(v T) bool {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return false
	}
	s.queue = append(s.queue, v)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// end queues last, if given, as the stream's final value; the channel is
// closed once the consumer has received everything queued.
func (s *Stream[T]) end(last ...T) {
	s.mu.Lock()
	if !s.ended {
		s.queue = append(s.queue, last...)
		s.ended = true
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// next returns the oldest queued value, or ok false and whether the stream
// has ended when none is queued.
func (s *Stream[T]) next() (v T, ok, ended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head == len(s.queue) {
		return v, false, s.ended
	}
	v = s.queue[s.head]
	var zero T
	s.queue[s.head] = zero
	s.head++
	switch {
	case s.head == len(s.queue):
		s.queue, s.head = s.queue[:0], 0
	case s.head >= 64 && 2*s.head >= len(s.queue):
		// A consumer that keeps up but never empties the queue would
		// otherwise keep every value it has read alive.
		n := copy(s.queue, s.queue[s.head:])
		clear(s.queue[n:])
		s.queue, s.head = s.queue[:n], 0
	}
	return v, true, s.ended
}

// forward runs on a goroutine of its own until the stream ends, is halted,
// or done is closed (the client has shut down).
func (s *Stream[T]) forward(done <-chan struct{}) {
	defer close(s.exited)
	defer close(s.out)
	for {
		v, ok, ended := s.next()
		if !ok {
			if ended {
				return
			}
			select {
			case <-s.wake:
				continue
			case <-s.stop:
				return
			case <-done:
				return
			}
		}
		select {
		case s.out <- v:
		case <-s.stop:
			return
		case <-done:
			return
		}
	}
}

// closedStream returns a stream that delivers vs and ends, with no
// goroutine: the client is closed and can start none.
func closedStream[T any](vs ...T) *Stream[T] {
	s := newStream[T]()
	s.out = make(chan T, len(vs))
	for _, v := range vs {
		s.out <- v
	}
	close(s.out)
	close(s.exited)
	s.ended = true
	s.stopOnce.Do(func() { close(s.stop) })
	return s
}
