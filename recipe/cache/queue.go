package cache

import "sync"

// queue hands events to one reader through a channel, with an unbounded
// queue between: the cache never waits for a slow reader and never drops
// an event, as the client's streams.
type queue struct {
	mu    sync.Mutex
	items []Event
	wake  chan struct{} // capacity 1: items were added
	stop  chan struct{} // closed by close
	once  sync.Once
	out   chan Event
	done  chan struct{} // closed when the pump has returned
}

func (q *queue) init() {
	q.wake = make(chan struct{}, 1)
	q.stop = make(chan struct{})
	q.out = make(chan Event)
	q.done = make(chan struct{})
	go q.pump()
}

func (q *queue) push(ev Event) {
	q.mu.Lock()
	q.items = append(q.items, ev)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// close ends the pump, dropping what was not received, and closes out.
// It returns once the pump has returned.
func (q *queue) close() {
	q.once.Do(func() { close(q.stop) })
	<-q.done
}

func (q *queue) pump() {
	defer close(q.done)
	defer close(q.out)
	for {
		q.mu.Lock()
		if len(q.items) == 0 {
			q.mu.Unlock()
			select {
			case <-q.wake:
				continue
			case <-q.stop:
				return
			}
		}
		ev := q.items[0]
		q.items[0] = Event{}
		q.items = q.items[1:]
		q.mu.Unlock()
		select {
		case q.out <- ev:
		case <-q.stop:
			return
		}
	}
}
