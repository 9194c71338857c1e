package discovery

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ServiceType is how an instance's node lives, as Curator names it.
type ServiceType string

const (
	// Dynamic instances are ephemeral: they go with their session.
	Dynamic ServiceType = "DYNAMIC"
	// DynamicSequential instances are ephemeral and sequential.
	DynamicSequential ServiceType = "DYNAMIC_SEQUENTIAL"
	// Static instances are persistent, registered by configuration.
	Static ServiceType = "STATIC"
	// Permanent instances are persistent and outlive their registrar.
	Permanent ServiceType = "PERMANENT"
)

// Instance is one instance of a service, in Curator's ServiceInstance
// JSON layout: the field names, their order and null for what is unset
// are Curator's, so that either side reads what the other writes.
type Instance struct {
	Name    string `json:"name"`
	ID      string `json:"id"`
	Address string `json:"address"`
	Port    *int   `json:"port"`
	SSLPort *int   `json:"sslPort"`
	// Payload is the JSON of the instance's payload, kept as is. Curator's
	// default serializer writes, and expects, a "@class" property naming
	// the payload's Java class (see JavaPayload).
	Payload json.RawMessage `json:"payload"`
	// RegistrationTimeUTC is in milliseconds since the epoch; Register
	// sets it when zero.
	RegistrationTimeUTC int64       `json:"registrationTimeUTC"`
	ServiceType         ServiceType `json:"serviceType"`
	URISpec             *URISpec    `json:"uriSpec"`
	// Enabled is absent (true) unless an instance is disabled.
	Enabled *bool `json:"enabled,omitempty"`
}

// IsEnabled reports whether the instance takes traffic.
func (i Instance) IsEnabled() bool { return i.Enabled == nil || *i.Enabled }

// Port returns a pointer to p, for Instance.Port and SSLPort.
func Port(p int) *int { return &p }

// JavaPayload returns fields (a struct or map that encodes as a JSON
// object) as a payload Curator's default serializer reads as an instance
// of the Java class named: a map for "java.util.LinkedHashMap".
func JavaPayload(class string, fields any) (json.RawMessage, error) {
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("discovery: payload is not a JSON object: %w", err)
	}
	name, _ := json.Marshal(class)
	out := append([]byte(`{"@class":`), name...)
	if rest := strings.TrimSpace(string(b)); rest != "{}" {
		out = append(out, ',')
		out = append(out, rest[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

// URISpec is Curator's UriSpec: a URI template of literal parts and
// {variable} parts.
type URISpec struct {
	Parts []URIPart `json:"parts"`
}

// URIPart is one part of a URISpec.
type URIPart struct {
	Value    string `json:"value"`
	Variable bool   `json:"variable"`
}

// ParseURISpec reads a template such as "{scheme}://{address}:{port}/api".
func ParseURISpec(s string) *URISpec {
	var spec URISpec
	for s != "" {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			spec.Parts = append(spec.Parts, URIPart{Value: s})
			break
		}
		if open > 0 {
			spec.Parts = append(spec.Parts, URIPart{Value: s[:open]})
		}
		end := strings.IndexByte(s[open:], '}')
		if end < 0 {
			spec.Parts = append(spec.Parts, URIPart{Value: s[open:]})
			break
		}
		spec.Parts = append(spec.Parts, URIPart{Value: s[open+1 : open+end], Variable: true})
		s = s[open+end+1:]
	}
	return &spec
}

// URI builds the instance's URI from its spec, as Curator's buildUriSpec:
// the variables scheme ("https" when it has an SSL port, else "http"),
// name, id, address, port and ssl-port, then vars. Unknown variables
// are left as "{name}". It returns "" without a spec.
func (i Instance) URI(vars map[string]string) string {
	if i.URISpec == nil {
		return ""
	}
	known := map[string]string{"name": i.Name, "id": i.ID, "address": i.Address, "scheme": "http"}
	if i.Port != nil {
		known["port"] = strconv.Itoa(*i.Port)
	}
	if i.SSLPort != nil {
		known["ssl-port"] = strconv.Itoa(*i.SSLPort)
		known["scheme"] = "https"
	}
	var b strings.Builder
	for _, p := range i.URISpec.Parts {
		if !p.Variable {
			b.WriteString(p.Value)
			continue
		}
		if v, ok := vars[p.Value]; ok {
			b.WriteString(v)
		} else if v, ok := known[p.Value]; ok {
			b.WriteString(v)
		} else {
			b.WriteString("{" + p.Value + "}")
		}
	}
	return b.String()
}
