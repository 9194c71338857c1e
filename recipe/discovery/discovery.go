package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/client"
)

var (
	// ErrNotRegistered is returned by Update for an instance not
	// registered through the same Discovery.
	ErrNotRegistered = errors.New("discovery: instance not registered here")
	// ErrClosed is returned by the registrations of a closed Discovery.
	ErrClosed = errors.New("discovery: closed")
	// ErrNoInstance is returned by Provider.Instance when the service has
	// no instance to hand out.
	ErrNoInstance = errors.New("discovery: no instance of the service")
)

// Discovery registers service instances and finds them under a base path,
// in the layout of Curator's ServiceDiscovery (ServiceDiscoveryImpl): the
// instance id of the service name is the node <base>/<name>/<id>. It is
// safe for concurrent use.
//
// Each instance registered through a Discovery is kept registered, by a
// goroutine of its own, until Unregister or Close: its node is written
// again when it is deleted, and when the session expires and the client
// starts a new one (set client.Config.RenewSession, or call Renew), as
// Curator registers its instances again on reconnection.
type Discovery struct {
	c    *client.Client
	base string

	mu     sync.Mutex // guards the fields below; held across registrations
	mine   map[string]*registration
	closed bool
}

// registration is an instance registered through a Discovery.
type registration struct {
	inst Instance
	k    *keeper
}

// New returns a Discovery of the instances under base, using c's session.
func New(c *client.Client, base string) *Discovery {
	return &Discovery{c: c, base: base, mine: map[string]*registration{}}
}

func (d *Discovery) servicePath(name string) string { return path.Join(d.base, name) }

func key(name, id string) string { return name + "/" + id }

// Register writes inst's node and keeps it registered until Unregister or
// Close: ephemeral for a Dynamic instance, ephemeral sequential for a
// DynamicSequential one (named by its id and a sequence number, which
// Instance does not find, as in Curator), persistent for Static and
// Permanent ones. A missing ServiceType is Dynamic, a zero
// RegistrationTimeUTC now. The service's node and the base path are created
// as containers when missing. A node already at the instance's path is
// replaced, and so is an earlier registration of the same instance here.
//
// When Register fails after sending the create (ctx ended, the connection
// broke), the node may have been created all the same: a Dynamic one goes
// with the session, any is replaced by the next Register.
func (d *Discovery) Register(ctx context.Context, inst Instance) error {
	if err := checkName("service name", inst.Name); err != nil {
		return err
	}
	if err := checkName("instance id", inst.ID); err != nil {
		return err
	}
	if inst.ServiceType == "" {
		inst.ServiceType = Dynamic
	}
	if !inst.ServiceType.valid() {
		return fmt.Errorf("discovery: register %s/%s: unknown service type %q", inst.Name, inst.ID, inst.ServiceType)
	}
	if inst.RegistrationTimeUTC == 0 {
		inst.RegistrationTimeUTC = time.Now().UnixMilli()
	}
	data, err := json.Marshal(inst)
	if err != nil {
		return fmt.Errorf("discovery: register %s/%s: %w", inst.Name, inst.ID, err)
	}
	mode := client.ModePersistent
	switch inst.ServiceType {
	case Dynamic:
		mode = client.ModeEphemeral
	case DynamicSequential:
		mode = client.ModeEphemeralSequential
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if old := d.mine[key(inst.Name, inst.ID)]; old != nil {
		delete(d.mine, key(inst.Name, inst.ID))
		if err := old.k.remove(ctx); err != nil {
			return fmt.Errorf("discovery: register %s/%s again: %w", inst.Name, inst.ID, err)
		}
	}
	k, err := startKeeper(ctx, d.c, path.Join(d.servicePath(inst.Name), inst.ID), mode, data)
	if err != nil {
		return fmt.Errorf("discovery: register %s/%s: %w", inst.Name, inst.ID, err)
	}
	d.mine[key(inst.Name, inst.ID)] = &registration{inst: inst, k: k}
	return nil
}

// Update writes inst over the node of the instance registered here with
// its name and id (Curator's updateService), and keeps it for every later
// write. A zero RegistrationTimeUTC or empty ServiceType keeps the
// registered one; the service type cannot change (register the instance
// again for that).
func (d *Discovery) Update(ctx context.Context, inst Instance) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	reg := d.mine[key(inst.Name, inst.ID)]
	if reg == nil {
		return fmt.Errorf("discovery: update %s/%s: %w", inst.Name, inst.ID, ErrNotRegistered)
	}
	if inst.RegistrationTimeUTC == 0 {
		inst.RegistrationTimeUTC = reg.inst.RegistrationTimeUTC
	}
	if inst.ServiceType == "" {
		inst.ServiceType = reg.inst.ServiceType
	}
	if inst.ServiceType != reg.inst.ServiceType {
		return fmt.Errorf("discovery: update %s/%s: service type %s registered as %s", inst.Name, inst.ID, inst.ServiceType, reg.inst.ServiceType)
	}
	data, err := json.Marshal(inst)
	if err != nil {
		return fmt.Errorf("discovery: update %s/%s: %w", inst.Name, inst.ID, err)
	}
	reg.inst = inst
	if err := reg.k.set(ctx, data); err != nil {
		return fmt.Errorf("discovery: update %s/%s: %w", inst.Name, inst.ID, err)
	}
	return nil
}

// Unregister stops keeping the instance registered and deletes its node,
// retrying across connection losses until ctx ends. An instance not
// registered here is left alone, as Curator's unregisterService leaves it.
func (d *Discovery) Unregister(ctx context.Context, name, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	reg := d.mine[key(name, id)]
	if reg == nil {
		return nil
	}
	delete(d.mine, key(name, id))
	if err := reg.k.remove(ctx); err != nil {
		return fmt.Errorf("discovery: unregister %s/%s: %w", name, id, err)
	}
	return nil
}

// Close unregisters every instance registered here, Static and Permanent
// ones included, as Curator's ServiceDiscovery.close does. Registrations
// fail with ErrClosed afterwards; queries still work.
func (d *Discovery) Close(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	var errs []error
	for k, reg := range d.mine {
		delete(d.mine, k)
		if err := reg.k.remove(ctx); err != nil {
			errs = append(errs, fmt.Errorf("discovery: unregister %s/%s: %w", reg.inst.Name, reg.inst.ID, err))
		}
	}
	return errors.Join(errs...)
}

// Names returns the names of the services under the base path, sorted
// (Curator's queryForNames); none when the base path does not exist.
func (d *Discovery) Names(ctx context.Context) ([]string, error) {
	names, _, err := d.c.Children(ctx, d.base)
	if errors.Is(err, client.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovery: names under %s: %w", d.base, err)
	}
	slices.Sort(names)
	return names, nil
}

// Instances returns the instances of the service name, sorted by node
// name (Curator's queryForInstances); none when the service has no node.
// Nodes deleted while it reads, and nodes that do not hold an instance,
// are left out.
func (d *Discovery) Instances(ctx context.Context, name string) ([]Instance, error) {
	nodes, _, err := d.c.Children(ctx, d.servicePath(name))
	if errors.Is(err, client.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovery: instances of %s: %w", name, err)
	}
	slices.Sort(nodes)
	var out []Instance
	for _, node := range nodes {
		data, _, err := d.c.Get(ctx, path.Join(d.servicePath(name), node))
		if errors.Is(err, client.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("discovery: instances of %s: %w", name, err)
		}
		var inst Instance
		if json.Unmarshal(data, &inst) == nil {
			out = append(out, inst)
		}
	}
	return out, nil
}

// Instance reads the instance id of the service name (Curator's
// queryForInstance); ok is false when it has no node.
func (d *Discovery) Instance(ctx context.Context, name, id string) (inst Instance, ok bool, err error) {
	data, _, err := d.c.Get(ctx, path.Join(d.servicePath(name), id))
	if errors.Is(err, client.ErrNoNode) {
		return Instance{}, false, nil
	}
	if err == nil {
		err = json.Unmarshal(data, &inst)
	}
	if err != nil {
		return Instance{}, false, fmt.Errorf("discovery: instance %s/%s: %w", name, id, err)
	}
	return inst, true, nil
}

// ServiceCache is a live list of a service's instances, read from the
// ensemble and kept up to date with watches, as Curator's ServiceCache. It
// is safe for concurrent use.
type ServiceCache struct{ l *live[Instance] }

// Cache reads the instances of the service name and keeps the list up to
// date until Close. The service need not have a node yet.
func (d *Discovery) Cache(ctx context.Context, name string) (*ServiceCache, error) {
	l, err := startLive(ctx, d.c, d.servicePath(name), func(_ string, data []byte) (Instance, bool) {
		var inst Instance
		return inst, json.Unmarshal(data, &inst) == nil
	})
	if err != nil {
		return nil, fmt.Errorf("discovery: cache of %s: %w", name, err)
	}
	return &ServiceCache{l}, nil
}

// Instances returns the latest list of instances, sorted by node name.
// Nodes that do not hold an instance are left out.
func (sc *ServiceCache) Instances() []Instance { return sc.l.current() }

// Updates delivers the list of instances, sorted by node name, each time it
// changes, the first time with the list read by Cache. A list not yet
// received when the next one comes is dropped: a slow reader skips to the
// latest. The channel is closed by Close, or when the client closes.
func (sc *ServiceCache) Updates() <-chan []Instance { return sc.l.updates }

// Close stops keeping the list up to date.
func (sc *ServiceCache) Close() { sc.l.close() }

// Strategy picks the instance a Provider hands out, as Curator's
// ProviderStrategy. Pick is given at least one instance, and may be called
// from several goroutines at once.
type Strategy interface {
	Pick(instances []Instance) Instance
}

// RoundRobin returns a Strategy that hands out the instances in turn
// (Curator's RoundRobinStrategy, the default).
func RoundRobin() Strategy { return new(roundRobin) }

type roundRobin struct{ next atomic.Uint64 }

func (r *roundRobin) Pick(instances []Instance) Instance {
	return instances[(r.next.Add(1)-1)%uint64(len(instances))]
}

// Random returns a Strategy that picks an instance at random (Curator's
// RandomStrategy).
func Random() Strategy { return random{} }

type random struct{}

func (random) Pick(instances []Instance) Instance { return instances[rand.IntN(len(instances))] }

// Provider hands out instances of a service, one at a time, from a
// ServiceCache, as Curator's ServiceProvider: only enabled instances, and
// not those that NoteError has marked as down. It is safe for concurrent
// use.
type Provider struct {
	sc       *ServiceCache
	strategy Strategy
	down     downInstances
}

// ProviderOption configures a Provider.
type ProviderOption func(*Provider)

// WithDownInstancePolicy sets how many errors (NoteError) make an instance
// down, and for how long after the first of them it stays down. The
// default is Curator's: 2 errors, 30 seconds.
func WithDownInstancePolicy(timeout time.Duration, errorThreshold int) ProviderOption {
	return func(p *Provider) { p.down.timeout, p.down.threshold = timeout, errorThreshold }
}

// NewProvider returns a Provider of the instances in sc, picked by
// strategy (RoundRobin when nil). Closing sc is the caller's.
func NewProvider(sc *ServiceCache, strategy Strategy, opts ...ProviderOption) *Provider {
	if strategy == nil {
		strategy = RoundRobin()
	}
	p := &Provider{sc: sc, strategy: strategy}
	p.down.timeout, p.down.threshold = 30*time.Second, 2
	for _, opt := range opts {
		opt(p)
	}
	return p
}

// Instances returns the instances the provider may hand out (Curator's
// getAllInstances).
func (p *Provider) Instances() []Instance {
	return slices.DeleteFunc(p.sc.Instances(), func(i Instance) bool {
		return i.Disabled || p.down.isDown(i)
	})
}

// Instance hands out one instance, or fails with ErrNoInstance.
func (p *Provider) Instance() (Instance, error) {
	all := p.Instances()
	if len(all) == 0 {
		return Instance{}, ErrNoInstance
	}
	return p.strategy.Pick(all), nil
}

// NoteError reports that a call to inst failed. An instance with as many
// errors as the down policy's threshold is not handed out until the
// policy's timeout after its first error has passed.
func (p *Provider) NoteError(inst Instance) { p.down.add(inst) }

// downInstances counts the errors of instances, as Curator's
// DownInstanceManager.
type downInstances struct {
	timeout   time.Duration
	threshold int

	mu     sync.Mutex // guards errors
	errors map[string]*downStatus
}

type downStatus struct {
	since time.Time
	count int
}

func (d *downInstances) add(inst Instance) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.purge()
	if d.errors == nil {
		d.errors = map[string]*downStatus{}
	}
	s := d.errors[key(inst.Name, inst.ID)]
	if s == nil {
		s = &downStatus{since: time.Now()}
		d.errors[key(inst.Name, inst.ID)] = s
	}
	s.count++
}

func (d *downInstances) isDown(inst Instance) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.purge()
	s := d.errors[key(inst.Name, inst.ID)]
	return s != nil && s.count >= d.threshold
}

// purge forgets the errors of instances whose first error is older than
// the timeout. d.mu is held.
func (d *downInstances) purge() {
	for k, s := range d.errors {
		if time.Since(s.since) >= d.timeout {
			delete(d.errors, k)
		}
	}
}
