// Package discovery owns group membership and service discovery, built on
// the client package and the cache recipe.
//
// # Group membership
//
// Join makes a process a member of a group: an ephemeral node
// group/name holding the member's data, which goes when the process's
// session ends. If the session comes back without the node, or the
// client starts a new session after expiry, the Member writes it again,
// until Leave. WatchGroup keeps a live list of the members.
//
// # Service discovery
//
// A Discovery registers and finds service instances in Apache Curator's
// ServiceDiscovery layout (curator-x-discovery), so that services
// registered by Java processes with Curator are found by Go processes, and
// the other way round:
//
//	<base>/<service name>/<instance id>
//
// Each node holds the instance as Curator's JsonInstanceSerializer writes
// it: name, id, address, port, sslPort, payload, registrationTimeUTC,
// serviceType and uriSpec, with null for what is unset. Dynamic instances
// (the default) are ephemeral; Static and Permanent ones persistent. Like
// Curator, a Discovery registers its instances again when their nodes are
// missing after the session comes back or a new one begins. Missing
// parents are created as containers, which the server removes once empty.
//
// The payload is kept as raw JSON. Curator's default serializer writes
// the payload's Java class in a "@class" property and needs it to read
// one back: JavaPayload adds it, and a Go reader may ignore it.
//
// A ServiceCache keeps a live list of a service's instances; a Provider
// hands one out at a time, round robin or at random, skipping disabled
// instances, as Curator's ServiceProvider.
package discovery
