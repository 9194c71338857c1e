// Package discovery owns group membership and service discovery, built on
// the client package: processes say that they are there, and others find
// them, and follow them as they come and go.
//
// # Group membership
//
// Join makes a process a member of a group, as Curator's GroupMember does:
// an ephemeral node
//
//	<group>/<member id>    data: the member's, as given to Join and SetData
//
// The group's node and its missing ancestors are created as containers,
// which the server removes once they are empty. WatchGroup follows the
// group: a live list of its members and their data.
//
// # Service discovery
//
// A Discovery registers service instances and finds them in the layout of
// Apache Curator's ServiceDiscovery (curator-x-discovery), so that a Go
// process finds the services that Java processes registered with Curator,
// and the other way round:
//
//	<base>/<service name>/<instance id>    data: the instance, as JSON
//
// The JSON is what Curator's JsonInstanceSerializer writes with its default
// settings (see Instance): name, id, address, port, sslPort, payload,
// registrationTimeUTC, serviceType and uriSpec, null for what is unset, and
// enabled only when false. The node of a Dynamic instance (the default) is
// ephemeral, that of a DynamicSequential one ephemeral and sequential, those
// of Static and Permanent ones persistent. Missing parents are created as
// containers.
//
// The payload is kept as the raw JSON it is written as. Curator's payload
// is typed with Jackson's class annotation: an object payload carries its
// Java class as a first property, {"@class":"com.example.Details",…}, and
// Curator reads it back as that class (an object without it as a
// java.util.LinkedHashMap). JavaPayload writes a payload that way;
// DecodePayload and PayloadClass read one.
//
// A ServiceCache is a live list of a service's instances; a Provider hands
// one out at a time from it, round robin or at random, skipping disabled
// instances and those it was told had failed, as Curator's
// ServiceProvider.
//
// # Guarantees
//
// A member's node, and the node of every instance registered through a
// Discovery, is kept in place until Leave, Unregister or Close: written
// again when someone deletes it, and when the session expires and the
// client starts a new one. While the session is gone its ephemeral nodes
// are too, as they must be: others see the process go, and come back. The
// recipes never start a session themselves: set client.Config.RenewSession,
// as Curator always does, or call Renew. A node of another session at the
// same path is not fought over: it is replaced when Join or Register is
// called, and otherwise waited for. (Curator's ServiceDiscovery writes its
// instances again, deleting and creating them, on every reconnection; here
// a node is written again only when it is missing or belongs to an expired
// session, so a reconnection alone changes nothing others can see.)
//
// A live list (Group, ServiceCache) is read when it starts, then kept up to
// date with one-shot watches, which every ZooKeeper server supports: a
// child watch on the group's or service's node (an exists watch while that
// node does not exist), and a data watch on each child, so that a member's
// new data or a disabled instance shows too. Whatever a watch reports is
// read again from the ensemble, so the list converges to what the ensemble
// holds; a list that changes quickly may be seen at only some of its
// states. Across a connection loss the client sets the watches again and
// reports what changed meanwhile; when the session expires, the list stays
// as last read until the client's new session reads it all again. Updates
// offers each new list on a channel that keeps only the latest; Members
// and Instances return it at any time.
//
// # Goroutines
//
// Each Membership and each registered instance has one goroutine, which
// watches its node and the client's state; Leave, Unregister and Close end
// it. Each live list has one goroutine that reads and owns the list, and
// one per child whose data watch is armed, waiting for it; Close ends them.
// All of them end when the client closes.
//
// # Using it
//
//	d := discovery.New(c, "/services")
//	defer d.Close(context.Background())
//	inst := discovery.NewInstance("orders")
//	inst.Address, inst.Port = "10.0.0.7", new(8080)
//	inst.URISpec = discovery.MustParseURISpec("{scheme}://{address}:{port}")
//	if err := d.Register(ctx, inst); err != nil { ... }
//
//	orders, err := d.Cache(ctx, "orders")
//	if err != nil { ... }
//	defer orders.Close()
//	p := discovery.NewProvider(orders, discovery.RoundRobin())
//	next, err := p.Instance()
//	if err != nil { ... }
//	call(next.URI(nil))
package discovery
