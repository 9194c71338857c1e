package cache

import "sync"

// queue hands a cache's events to one reader through a channel, with an
// unbounded queue between the two, as the client's streams do: the cache
// never waits for a slow reader and never drops an event for it.
type queue struct {
	out chan Event

	mu      sync.Mutex // guards items, ended and started
	items   []Event
	ended   bool // nothing more will be pushed: close out once items are out
	started bool // forward runs, or has run

	wake     chan struct{} // capacity 1: an event or the end was pushed
	stop     chan struct{} // closed by halt: drop what is queued and exit
	stopOnce sync.Once
}

func newQueue() *queue {
	return &queue{
		out:  make(chan Event),
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
	}
}

// start runs the goroutine that feeds out, under wg, unless it runs
// already or the queue was halted first.
func (q *queue) start(wg *sync.WaitGroup) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.started {
		q.started = true
		wg.Go(q.forward)
	}
}

// push queues ev. It never blocks.
func (q *queue) push(ev Event) {
	q.mu.Lock()
	if !q.ended {
		q.items = append(q.items, ev)
	}
	q.mu.Unlock()
	q.signal()
}

// end closes out once everything queued has been received.
func (q *queue) end() {
	q.mu.Lock()
	q.ended = true
	q.mu.Unlock()
	q.signal()
}

// halt closes out at once, dropping what was not received. The goroutine
// of a started queue closes it; halt does when there is none.
func (q *queue) halt() {
	q.stopOnce.Do(func() {
		close(q.stop)
		q.mu.Lock()
		defer q.mu.Unlock()
		if !q.started {
			q.started = true // nobody may start it any more
			close(q.out)
		}
	})
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest queued event; ok is false when there is none, and
// ended then says whether there will be no more.
func (q *queue) next() (ev Event, ok, ended bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		q.items = nil // let a burst's backing array go
		return Event{}, false, q.ended
	}
	ev = q.items[0]
	q.items[0] = Event{}
	q.items = q.items[1:]
	return ev, true, false
}

func (q *queue) forward() {
	defer close(q.out)
	for {
		ev, ok, ended := q.next()
		if !ok {
			if ended {
				return
			}
			select {
			case <-q.wake:
				continue
			case <-q.stop:
				return
			}
		}
		select {
		case q.out <- ev:
		case <-q.stop:
			return
		}
	}
}
