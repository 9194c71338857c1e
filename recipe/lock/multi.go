package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/collie-io/collie/client"
)

// Multi takes several locks as one, as Curator's InterProcessMultiLock: all
// of them or none. Locks are taken in the order given and released in the
// reverse order; processes that take overlapping sets must take them in
// one order, or they may wait for each other until their contexts end.
type Multi struct {
	locks []Locker
}

// NewMulti returns a lock made of locks.
func NewMulti(locks ...Locker) *Multi { return &Multi{locks: slices.Clone(locks)} }

// Lock takes every lock in order, waiting for each until it holds it. When
// one cannot be taken (ctx ends, the session expires) it releases those
// already taken, in reverse order (in the background once ctx has ended),
// and returns the error.
func (m *Multi) Lock(ctx context.Context) (*MultiLease, error) {
	if len(m.locks) == 0 {
		return nil, errors.New("lock: a Multi of no locks")
	}
	leases := make([]*Lease, 0, len(m.locks))
	for i, lk := range m.locks {
		l, err := lk.Lock(ctx)
		if err != nil {
			err = fmt.Errorf("lock %d of %d: %w", i+1, len(m.locks), err)
			return nil, errors.Join(err, unlockAll(ctx, leases))
		}
		leases = append(leases, l)
	}
	return newMultiLease(leases), nil
}

// MultiLease holds every lock of a Multi.
type MultiLease struct {
	leases []*Lease

	lost     chan struct{}
	loseOnce sync.Once
	stop     chan struct{}
	stopOnce sync.Once
	watching sync.WaitGroup
}

func newMultiLease(leases []*Lease) *MultiLease {
	ml := &MultiLease{leases: leases, lost: make(chan struct{}), stop: make(chan struct{})}
	for _, l := range leases {
		ml.watching.Go(func() {
			select {
			case <-l.Lost():
				ml.loseOnce.Do(func() { close(ml.lost) })
			case <-ml.stop:
			}
		})
	}
	return ml
}

// Leases returns the lease of each lock, in the order of the locks.
func (ml *MultiLease) Leases() []*Lease { return slices.Clone(ml.leases) }

// Lost returns a channel closed when any of the leases is lost.
func (ml *MultiLease) Lost() <-chan struct{} { return ml.lost }

// Guard returns ops preceded by a check of every lease's node, for Multi:
// the transaction fails once any lock has passed on. The locks' nodes must
// then be in the ensemble that runs the transaction.
func (ml *MultiLease) Guard(ops ...client.Op) []client.Op {
	checks := make([]client.Op, 0, len(ml.leases)+len(ops))
	for _, l := range ml.leases {
		checks = append(checks, client.CheckOp(l.node, client.AnyVersion))
	}
	return append(checks, ops...)
}

// Do applies ops as one transaction, through the first lease's client, on
// the condition that every lease still holds its lock, and returns the
// results of ops. When a lock has passed on, the error wraps ErrLost.
func (ml *MultiLease) Do(ctx context.Context, ops ...client.Op) ([]client.OpResult, error) {
	return guardedMulti(ctx, ml.leases[0].c, len(ml.leases), ml.Guard(ops...))
}

// Unlock releases every lease in reverse order, each as Lease.Unlock does,
// and returns their errors joined; a release pending in the background is
// not one of them. A lease whose release the server refused stays held:
// unlock it from Leases. A second Unlock returns ErrNotHeld.
func (ml *MultiLease) Unlock(ctx context.Context) error {
	first := false
	ml.stopOnce.Do(func() { first = true })
	if !first {
		return ErrNotHeld
	}
	err := unlockAll(ctx, ml.leases)
	close(ml.stop)
	ml.watching.Wait()
	ml.loseOnce.Do(func() { close(ml.lost) })
	return err
}

// unlockAll releases leases in reverse order, each once, and returns every
// error but pending releases: those end in the background.
func unlockAll(ctx context.Context, leases []*Lease) error {
	var errs []error
	for _, l := range slices.Backward(leases) {
		if err := l.Unlock(ctx); refused(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
