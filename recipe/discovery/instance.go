package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/collie-io/collie/recipe/internal/uuid"
)

// ServiceType says how an instance's node lives, under Curator's names.
type ServiceType string

const (
	// Dynamic instances have an ephemeral node: they go with the session
	// that registered them. The default.
	Dynamic ServiceType = "DYNAMIC"
	// DynamicSequential instances have an ephemeral sequential node, named
	// by their id followed by a sequence number.
	DynamicSequential ServiceType = "DYNAMIC_SEQUENTIAL"
	// Static instances have a persistent node.
	Static ServiceType = "STATIC"
	// Permanent instances have a persistent node.
	Permanent ServiceType = "PERMANENT"
)

// dynamic reports whether the instance's node is ephemeral.
func (t ServiceType) dynamic() bool { return t == Dynamic || t == DynamicSequential }

func (t ServiceType) valid() bool {
	switch t {
	case Dynamic, DynamicSequential, Static, Permanent:
		return true
	}
	return false
}

// Instance is one instance of a service, as Curator's ServiceInstance. Its
// JSON is the node's data, in the layout Curator's JsonInstanceSerializer
// reads and writes with its default settings:
//
//	{"name":"orders","id":"7c2e…","address":"10.0.0.7","port":8080,"sslPort":null,
//	 "payload":{"@class":"com.example.Details","zone":"eu"},
//	 "registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC",
//	 "uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},…]}}
//
// Unset fields are null. "enabled" is written only for a disabled instance
// ("enabled":false): Curator's default serializer leaves it out, for the
// sake of Curator versions that refuse it, and reads a missing one as true.
// Unknown fields are ignored, as Curator ignores them.
type Instance struct {
	// Name is the service's name, ID the instance's, unique within the
	// service. Each is one path component.
	Name string
	ID   string
	// Address is the host name or IP address; "" is null.
	Address string
	// Port and SSLPort are the instance's ports; nil is null.
	Port    *int
	SSLPort *int
	// Payload is the payload's JSON, kept as written, Java type
	// information included (see JavaPayload, DecodePayload); nil is null.
	Payload json.RawMessage
	// RegistrationTimeUTC is when the instance was registered, in
	// milliseconds since the Unix epoch.
	RegistrationTimeUTC int64
	// ServiceType is how the instance's node lives; "" means Dynamic.
	ServiceType ServiceType
	// URISpec is the template of the instance's URI; nil is null.
	URISpec *URISpec
	// Disabled instances are registered but handed out by no Provider
	// (Curator's enabled, inverted, so that the zero Instance is enabled).
	Disabled bool
}

// NewInstance returns a Dynamic instance of the service name with a random
// id (a UUID) registered now, as Curator's ServiceInstance.builder() does;
// the caller sets its address, ports, payload and URI spec.
func NewInstance(name string) Instance {
	return Instance{
		Name:                name,
		ID:                  uuid.New(),
		RegistrationTimeUTC: time.Now().UnixMilli(),
		ServiceType:         Dynamic,
	}
}

// wireInstance is Instance as Jackson writes Curator's ServiceInstance:
// same field names, same order, null for what is unset.
type wireInstance struct {
	Name                string          `json:"name"`
	ID                  string          `json:"id"`
	Address             *string         `json:"address"`
	Port                *int            `json:"port"`
	SSLPort             *int            `json:"sslPort"`
	Payload             json.RawMessage `json:"payload"`
	RegistrationTimeUTC int64           `json:"registrationTimeUTC"`
	ServiceType         *ServiceType    `json:"serviceType"`
	URISpec             *URISpec        `json:"uriSpec"`
	Enabled             *bool           `json:"enabled,omitempty"`
}

// MarshalJSON writes the instance in Curator's layout.
func (i Instance) MarshalJSON() ([]byte, error) {
	w := wireInstance{
		Name:                i.Name,
		ID:                  i.ID,
		Port:                i.Port,
		SSLPort:             i.SSLPort,
		Payload:             i.Payload,
		RegistrationTimeUTC: i.RegistrationTimeUTC,
		URISpec:             i.URISpec,
	}
	if i.Address != "" {
		w.Address = &i.Address
	}
	if len(w.Payload) == 0 {
		w.Payload = nil
	}
	t := i.ServiceType
	if t == "" {
		t = Dynamic
	}
	w.ServiceType = &t
	if i.Disabled {
		w.Enabled = new(false)
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads an instance in Curator's layout. A missing or null
// serviceType is Dynamic and a missing enabled true, as Curator reads them.
func (i *Instance) UnmarshalJSON(data []byte) error {
	var w wireInstance
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*i = Instance{
		Name:                w.Name,
		ID:                  w.ID,
		Port:                w.Port,
		SSLPort:             w.SSLPort,
		RegistrationTimeUTC: w.RegistrationTimeUTC,
		ServiceType:         Dynamic,
		URISpec:             w.URISpec,
		Disabled:            w.Enabled != nil && !*w.Enabled,
	}
	if w.Address != nil {
		i.Address = *w.Address
	}
	if !bytes.Equal(w.Payload, []byte("null")) {
		i.Payload = w.Payload
	}
	if w.ServiceType != nil {
		i.ServiceType = *w.ServiceType
	}
	return nil
}

// URI builds the instance's URI from its URISpec, as Curator's
// buildUriSpec does; "" when it has none. See URISpec.Build for the
// variables.
func (i Instance) URI(vars map[string]string) string {
	if i.URISpec == nil {
		return ""
	}
	return i.URISpec.build(&i, vars)
}

// payloadClassProperty is where Jackson writes the Java class of an object
// payload, as Curator's ServiceInstance asks (@JsonTypeInfo with
// JsonTypeInfo.Id.CLASS, as a property).
const payloadClassProperty = "@class"

// JavaPayload encodes v as a payload that Curator's default serializer
// reads back as an instance of the Java class named class, writing the type
// information it expects, as Jackson does:
//
//   - an object gets a first property "@class": class. With class "" it is
//     left as it is, and Curator reads it as a java.util.LinkedHashMap.
//   - an array is wrapped as [class, array]; class "" means
//     "java.util.ArrayList". Curator cannot read an array without it.
//   - a string, number or boolean is written as it is, as Jackson writes
//     Java's String, Integer, Double and Boolean, and reads them back as
//     such; class is not written.
func JavaPayload(class string, v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("discovery: payload: %w", err)
	}
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '{' && class != "":
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(b, &fields); err != nil {
			return nil, fmt.Errorf("discovery: payload: %w", err)
		}
		if _, ok := fields[payloadClassProperty]; ok {
			return nil, fmt.Errorf("discovery: payload has a %q property of its own", payloadClassProperty)
		}
		name, _ := json.Marshal(class)
		out := append([]byte(`{"`+payloadClassProperty+`":`), name...)
		if rest := bytes.TrimSpace(b[1:]); rest[0] != '}' {
			out = append(out, ',')
		}
		return append(out, b[1:]...), nil
	case len(b) > 0 && b[0] == '[':
		if class == "" {
			class = "java.util.ArrayList"
		}
		name, _ := json.Marshal(class)
		return fmt.Appendf(nil, "[%s,%s]", name, b), nil
	}
	return b, nil
}

// DecodePayload decodes the instance's payload into v, as encoding/json
// does, without the Java type information Curator's serializer adds (the
// "@class" property of an object, the [class, value] wrapping of an
// array). A null payload leaves v as it is.
func (i Instance) DecodePayload(v any) error {
	raw, err := i.untypedPayload()
	if err != nil || raw == nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("discovery: payload of %s/%s: %w", i.Name, i.ID, err)
	}
	return nil
}

// PayloadClass returns the Java class the payload names (its "@class"
// property, or the first element of a [class, value] array), or "" when it
// names none.
func (i Instance) PayloadClass() string {
	switch p := bytes.TrimSpace(i.Payload); {
	case len(p) > 0 && p[0] == '{':
		var typed struct {
			Class string `json:"@class"`
		}
		if json.Unmarshal(p, &typed) == nil {
			return typed.Class
		}
	case len(p) > 0 && p[0] == '[':
		var wrapped []json.RawMessage
		var class string
		if json.Unmarshal(p, &wrapped) == nil && len(wrapped) == 2 && json.Unmarshal(wrapped[0], &class) == nil {
			return class
		}
	}
	return ""
}

// untypedPayload returns the payload without its Java type information;
// nil for a null payload.
func (i Instance) untypedPayload() (json.RawMessage, error) {
	p := bytes.TrimSpace(i.Payload)
	switch {
	case len(p) == 0 || bytes.Equal(p, []byte("null")):
		return nil, nil
	case p[0] == '{':
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(p, &fields); err != nil {
			return nil, fmt.Errorf("discovery: payload of %s/%s: %w", i.Name, i.ID, err)
		}
		if _, ok := fields[payloadClassProperty]; !ok {
			return p, nil
		}
		delete(fields, payloadClassProperty)
		return json.Marshal(fields)
	case p[0] == '[':
		var wrapped []json.RawMessage
		if err := json.Unmarshal(p, &wrapped); err != nil {
			return nil, fmt.Errorf("discovery: payload of %s/%s: %w", i.Name, i.ID, err)
		}
		if len(wrapped) != 2 {
			return nil, fmt.Errorf("discovery: payload of %s/%s: an array payload is [class, value], not %d elements", i.Name, i.ID, len(wrapped))
		}
		return wrapped[1], nil
	}
	return p, nil
}

// URISpec is Curator's UriSpec: a URI template made of literal parts and
// variable parts, written "{scheme}://{address}:{port}/api".
type URISpec struct {
	Parts []URIPart
}

// URIPart is one part of a URISpec: literal text, or the name of a variable.
type URIPart struct {
	Value    string `json:"value"`
	Variable bool   `json:"variable"`
}

// ParseURISpec parses a URI template as Curator's UriSpec(String) does: the
// text between braces is a variable, trimmed of spaces; braces must pair
// and not nest. "{[}" and "{]}" stand for literal braces.
func ParseURISpec(s string) (*URISpec, error) {
	spec := &URISpec{Parts: []URIPart{}}
	inside := false
	for s != "" {
		i := strings.IndexAny(s, "{}")
		if i < 0 {
			i = len(s)
		}
		if i > 0 {
			value := s[:i]
			if inside {
				value = strings.TrimSpace(value)
			}
			spec.Parts = append(spec.Parts, URIPart{Value: value, Variable: inside})
		}
		if i == len(s) {
			break
		}
		switch s[i] {
		case '{':
			if inside {
				return nil, errors.New("discovery: URI spec: { inside a variable")
			}
			inside = true
		case '}':
			if !inside {
				return nil, errors.New("discovery: URI spec: } without {")
			}
			inside = false
		}
		s = s[i+1:]
	}
	if inside {
		return nil, errors.New("discovery: URI spec: variable not closed by }")
	}
	return spec, nil
}

// MustParseURISpec is ParseURISpec for templates known to be valid; it
// panics on an invalid one.
func MustParseURISpec(s string) *URISpec {
	spec, err := ParseURISpec(s)
	if err != nil {
		panic(err)
	}
	return spec
}

// String returns the template the spec was parsed from (spaces trimmed
// from variables).
func (s *URISpec) String() string {
	var b strings.Builder
	for _, p := range s.Parts {
		if p.Variable {
			b.WriteString("{" + p.Value + "}")
		} else {
			b.WriteString(p.Value)
		}
	}
	return b.String()
}

// Build fills the template's variables from vars as Curator's
// UriSpec.build(Map) does: "scheme" is "http" and "[" and "]" are literal
// braces unless vars says otherwise, and a variable with no value is left
// out. Instance.URI adds the instance's fields.
func (s *URISpec) Build(vars map[string]string) string { return s.build(nil, vars) }

// build fills the template with, from weakest to strongest: the defaults,
// the instance's fields ("name", "id", "address", "port", "ssl-port",
// "registration-time-utc", "service-type" in lower case, and "scheme"
// "https" when it has an SSL port), and vars.
func (s *URISpec) build(inst *Instance, vars map[string]string) string {
	known := map[string]string{"[": "{", "]": "}", "scheme": "http"}
	if inst != nil {
		known["name"] = inst.Name
		known["id"] = inst.ID
		known["address"] = inst.Address
		known["port"] = optionalPort(inst.Port)
		known["ssl-port"] = optionalPort(inst.SSLPort)
		known["registration-time-utc"] = strconv.FormatInt(inst.RegistrationTimeUTC, 10)
		known["service-type"] = strings.ToLower(string(inst.ServiceType))
		if inst.SSLPort != nil {
			known["scheme"] = "https"
		}
	}
	var b strings.Builder
	for _, p := range s.Parts {
		if !p.Variable {
			b.WriteString(p.Value)
		} else if v, ok := vars[p.Value]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(known[p.Value])
		}
	}
	return b.String()
}

func optionalPort(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

// MarshalJSON writes the spec as Jackson writes Curator's UriSpec,
// {"parts":[…]}, never with null parts, which Curator cannot build.
func (s URISpec) MarshalJSON() ([]byte, error) {
	parts := s.Parts
	if parts == nil {
		parts = []URIPart{}
	}
	return json.Marshal(struct {
		Parts []URIPart `json:"parts"`
	}{parts})
}

// UnmarshalJSON reads a spec written by Curator's UriSpec.
func (s *URISpec) UnmarshalJSON(data []byte) error {
	var w struct {
		Parts []URIPart `json:"parts"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	s.Parts = w.Parts
	return nil
}
