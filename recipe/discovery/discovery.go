package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/recipe/internal/znode"
)

// ErrNoInstance is returned by a Provider when the service has no
// enabled instance.
var ErrNoInstance = errors.New("discovery: no instance of the service")

// Discovery registers and finds service instances under a base path, in
// Curator's ServiceDiscovery layout: base/<service name>/<instance id>,
// each node holding the instance's JSON. It is safe for concurrent use.
//
// The instances registered through a Discovery are registered again when
// their node is missing after the session comes back, or after it expired
// and the client started a new one, as Curator's ServiceDiscovery does on
// RECONNECTED. That takes one goroutine, which Close ends.
type Discovery struct {
	c    *client.Client
	base string

	mu   sync.Mutex
	mine map[string]Instance // by name/id

	keeper *keeper
}

// New returns a Discovery under base, using c's session.
func New(c *client.Client, base string) *Discovery {
	d := &Discovery{c: c, base: base, mine: map[string]Instance{}}
	d.keeper = startKeeper(c, d.reregister)
	return d
}

// Close stops registering again; the instances' nodes are left to their
// sessions (use Unregister to remove one now).
func (d *Discovery) Close() { d.keeper.stop() }

func (d *Discovery) servicePath(name string) string { return d.base + "/" + name }

func (d *Discovery) instancePath(name, id string) string { return d.servicePath(name) + "/" + id }

// Register writes inst's node: ephemeral for Dynamic instances (the
// default), persistent for Static and Permanent ones. It sets
// RegistrationTimeUTC when zero. An existing node of the same id is
// replaced.
func (d *Discovery) Register(ctx context.Context, inst Instance) error {
	if inst.Name == "" || inst.ID == "" {
		return errors.New("discovery: an instance needs a name and an id")
	}
	if inst.ServiceType == "" {
		inst.ServiceType = Dynamic
	}
	if inst.RegistrationTimeUTC == 0 {
		inst.RegistrationTimeUTC = time.Now().UnixMilli()
	}
	if err := d.write(ctx, inst); err != nil {
		return err
	}
	d.mu.Lock()
	d.mine[inst.Name+"/"+inst.ID] = inst
	d.mu.Unlock()
	return nil
}

// write creates inst's node, replacing one in the way.
func (d *Discovery) write(ctx context.Context, inst Instance) error {
	data, err := json.Marshal(inst)
	if err != nil {
		return fmt.Errorf("discovery: encode %s/%s: %w", inst.Name, inst.ID, err)
	}
	mode := client.ModeEphemeral
	switch inst.ServiceType {
	case Static, Permanent:
		mode = client.ModePersistent
	case DynamicSequential:
		mode = client.ModeEphemeralSequential
	}
	p := d.instancePath(inst.Name, inst.ID)
	if err := znode.CreateContainers(ctx, d.c, d.servicePath(inst.Name)); err != nil {
		return fmt.Errorf("discovery: register %s: %w", p, err)
	}
	for {
		_, _, err := d.c.Create(ctx, p, data, mode, nil)
		if !errors.Is(err, client.ErrNodeExists) {
			if err != nil {
				return fmt.Errorf("discovery: register %s: %w", p, err)
			}
			return nil
		}
		// A node of an earlier registration, or of a session that has not
		// expired yet: this registration replaces it.
		if err := d.c.Delete(ctx, p, client.AnyVersion); err != nil && !errors.Is(err, client.ErrNoNode) {
			return fmt.Errorf("discovery: register %s: %w", p, err)
		}
	}
}

// Update writes inst's new JSON over its registered node.
func (d *Discovery) Update(ctx context.Context, inst Instance) error {
	data, err := json.Marshal(inst)
	if err != nil {
		return fmt.Errorf("discovery: encode %s/%s: %w", inst.Name, inst.ID, err)
	}
	if _, err := d.c.Set(ctx, d.instancePath(inst.Name, inst.ID), data, client.AnyVersion); err != nil {
		return fmt.Errorf("discovery: update %s/%s: %w", inst.Name, inst.ID, err)
	}
	d.mu.Lock()
	if _, ok := d.mine[inst.Name+"/"+inst.ID]; ok {
		d.mine[inst.Name+"/"+inst.ID] = inst
	}
	d.mu.Unlock()
	return nil
}

// Unregister removes the instance's node and stops registering it again.
func (d *Discovery) Unregister(ctx context.Context, name, id string) error {
	d.mu.Lock()
	delete(d.mine, name+"/"+id)
	d.mu.Unlock()
	err := d.c.Delete(ctx, d.instancePath(name, id), client.AnyVersion)
	if err != nil && !errors.Is(err, client.ErrNoNode) {
		return fmt.Errorf("discovery: unregister %s/%s: %w", name, id, err)
	}
	return nil
}

// Names returns the names of the services under the base path, sorted.
func (d *Discovery) Names(ctx context.Context) ([]string, error) {
	names, _, err := d.c.Children(ctx, d.base)
	if errors.Is(err, client.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovery: names: %w", err)
	}
	slices.Sort(names)
	return names, nil
}

// Instances returns the instances of the service, sorted by id. Nodes
// that vanish while it reads, or do not hold an instance, are left out.
func (d *Discovery) Instances(ctx context.Context, name string) ([]Instance, error) {
	ids, _, err := d.c.Children(ctx, d.servicePath(name))
	if errors.Is(err, client.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovery: instances of %s: %w", name, err)
	}
	slices.Sort(ids)
	var out []Instance
	for _, id := range ids {
		inst, err := d.Instance(ctx, name, id)
		if errors.Is(err, client.ErrNoNode) || errors.As(err, new(*json.SyntaxError)) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, inst)
	}
	return out, nil
}

// Instance reads one instance.
func (d *Discovery) Instance(ctx context.Context, name, id string) (Instance, error) {
	data, _, err := d.c.Get(ctx, d.instancePath(name, id))
	if err != nil {
		return Instance{}, fmt.Errorf("discovery: instance %s/%s: %w", name, id, err)
	}
	var inst Instance
	if err := json.Unmarshal(data, &inst); err != nil {
		return Instance{}, fmt.Errorf("discovery: instance %s/%s: %w", name, id, err)
	}
	return inst, nil
}

// reregister writes again the node of every instance registered here
// that is missing: after the session came back, or a new one began.
func (d *Discovery) reregister(ctx context.Context) error {
	d.mu.Lock()
	mine := make([]Instance, 0, len(d.mine))
	for _, inst := range d.mine {
		mine = append(mine, inst)
	}
	d.mu.Unlock()
	var errs []error
	for _, inst := range mine {
		ok, _, err := d.c.Exists(ctx, d.instancePath(inst.Name, inst.ID))
		if err == nil && !ok {
			err = d.write(ctx, inst)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ServiceCache is a live list of a service's instances, kept through a
// cache of its node's children.
type ServiceCache struct{ l *live }

// Cache starts a live list of the instances of the service name.
func (d *Discovery) Cache(ctx context.Context, name string) (*ServiceCache, error) {
	l, err := startLive(ctx, d.c, d.servicePath(name))
	if err != nil {
		return nil, fmt.Errorf("discovery: cache of %s: %w", name, err)
	}
	return &ServiceCache{l}, nil
}

// Instances returns the cached instances, sorted by id.
func (sc *ServiceCache) Instances() []Instance {
	var out []Instance
	for _, n := range sc.l.children() {
		var inst Instance
		if json.Unmarshal(n.Data, &inst) == nil && inst.ID != "" {
			out = append(out, inst)
		}
	}
	return out
}

// Changed is signalled (without waiting, signals coalescing) after each
// change of the list.
func (sc *ServiceCache) Changed() <-chan struct{} { return sc.l.changed }

// Close stops the cache.
func (sc *ServiceCache) Close() { sc.l.close() }

// Strategy picks an instance from a list.
type Strategy int

const (
	// RoundRobin takes the instances in turn.
	RoundRobin Strategy = iota
	// Random takes one at random.
	Random
)

// Provider hands out one instance of a service at a time from a
// ServiceCache, as Curator's ServiceProvider, skipping disabled ones.
type Provider struct {
	sc       *ServiceCache
	strategy Strategy
	next     atomic.Uint64
}

// NewProvider returns a provider over sc.
func NewProvider(sc *ServiceCache, s Strategy) *Provider { return &Provider{sc: sc, strategy: s} }

// Instance returns an instance, or ErrNoInstance.
func (p *Provider) Instance() (Instance, error) {
	all := slices.DeleteFunc(p.sc.Instances(), func(i Instance) bool { return !i.IsEnabled() })
	if len(all) == 0 {
		return Instance{}, ErrNoInstance
	}
	if p.strategy == Random {
		return all[rand.IntN(len(all))], nil
	}
	return all[(p.next.Add(1)-1)%uint64(len(all))], nil
}
