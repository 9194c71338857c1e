package discovery_test

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/collie-io/collie/recipe/discovery"
)

// curatorJSON is what Curator 5.4's JsonInstanceSerializer, with its
// default settings, wrote for an instance with a LinkedHashMap payload.
const curatorJSON = `{"name":"web","id":"j1","address":"10.0.0.1","port":80,"sslPort":443,` +
	`"payload":{"@class":"java.util.LinkedHashMap","zone":"eu","n":1},"registrationTimeUTC":1234,` +
	`"serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},` +
	`{"value":"://","variable":false},{"value":"address","variable":true},{"value":":","variable":false},` +
	`{"value":"port","variable":true},{"value":"/x","variable":false}]}}`

// curatorInstance is curatorJSON as an Instance.
func curatorInstance() discovery.Instance {
	return discovery.Instance{
		Name: "web", ID: "j1", Address: "10.0.0.1", Port: new(80), SSLPort: new(443),
		Payload:             json.RawMessage(`{"@class":"java.util.LinkedHashMap","zone":"eu","n":1}`),
		RegistrationTimeUTC: 1234, ServiceType: discovery.Dynamic,
		URISpec: discovery.MustParseURISpec("{scheme}://{address}:{port}/x"),
	}
}

// An instance reads and writes the same bytes as Curator's serializer.
func TestInstanceJSON(t *testing.T) {
	var read discovery.Instance
	if err := json.Unmarshal([]byte(curatorJSON), &read); err != nil {
		t.Fatal(err)
	}
	if want := curatorInstance(); !reflect.DeepEqual(read, want) {
		t.Errorf("read %+v\nwant %+v", read, want)
	}
	written, err := json.Marshal(curatorInstance())
	if err != nil {
		t.Fatal(err)
	}
	if string(written) != curatorJSON {
		t.Errorf("wrote %s\nwant  %s", written, curatorJSON)
	}
}

// Unset fields are null, as Curator writes them; enabled is written only
// when false; what Curator leaves out reads as its defaults.
func TestInstanceJSONDefaults(t *testing.T) {
	written, err := json.Marshal(discovery.Instance{Name: "web", ID: "g", Disabled: true})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"name":"web","id":"g","address":null,"port":null,"sslPort":null,"payload":null,` +
		`"registrationTimeUTC":0,"serviceType":"DYNAMIC","uriSpec":null,"enabled":false}`
	if string(written) != want {
		t.Errorf("wrote %s\nwant  %s", written, want)
	}
	for _, tc := range []struct {
		json string
		want discovery.Instance
	}{
		{`{"name":"web","id":"g"}`, discovery.Instance{Name: "web", ID: "g", ServiceType: discovery.Dynamic}},
		{string(written), discovery.Instance{Name: "web", ID: "g", ServiceType: discovery.Dynamic, Disabled: true}},
		{`{"name":"web","id":"g","serviceType":"STATIC","enabled":true,"unknown":[1]}`,
			discovery.Instance{Name: "web", ID: "g", ServiceType: discovery.Static}},
		{`{"name":"web","id":"g","serviceType":null,"payload":"text"}`,
			discovery.Instance{Name: "web", ID: "g", ServiceType: discovery.Dynamic, Payload: json.RawMessage(`"text"`)}},
	} {
		var got discovery.Instance
		if err := json.Unmarshal([]byte(tc.json), &got); err != nil {
			t.Errorf("%s: %v", tc.json, err)
		} else if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s read as %+v, want %+v", tc.json, got, tc.want)
		}
	}
}

func TestNewInstance(t *testing.T) {
	a, b := discovery.NewInstance("web"), discovery.NewInstance("web")
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !uuid.MatchString(a.ID) || a.ID == b.ID {
		t.Errorf("ids %q and %q are not distinct random UUIDs", a.ID, b.ID)
	}
	if a.ServiceType != discovery.Dynamic || a.RegistrationTimeUTC == 0 || a.Name != "web" {
		t.Errorf("NewInstance: %+v", a)
	}
}

// Payloads carry their Java class as Jackson writes it, and are decoded
// without it.
func TestPayload(t *testing.T) {
	type details struct {
		Zone   string `json:"zone"`
		Weight int    `json:"weight"`
	}
	for _, tc := range []struct {
		class string
		v     any
		want  string
	}{
		{"com.example.Details", details{"eu", 3}, `{"@class":"com.example.Details","zone":"eu","weight":3}`},
		{"java.util.HashMap", map[string]int{}, `{"@class":"java.util.HashMap"}`},
		{"", map[string]int{"a": 1}, `{"a":1}`},
		{"", []string{"a", "b"}, `["java.util.ArrayList",["a","b"]]`},
		{"java.util.LinkedList", []int{1}, `["java.util.LinkedList",[1]]`},
		{"java.lang.String", "text", `"text"`},
		{"", 42, `42`},
	} {
		got, err := discovery.JavaPayload(tc.class, tc.v)
		if err != nil || string(got) != tc.want {
			t.Errorf("JavaPayload(%q, %v) = %s, %v; want %s", tc.class, tc.v, got, err, tc.want)
		}
	}
	if _, err := discovery.JavaPayload("x.Y", map[string]string{"@class": "a.B"}); err == nil {
		t.Error("JavaPayload of an object with its own @class succeeded")
	}

	inst := discovery.Instance{Payload: json.RawMessage(`{"zone":"eu","@class":"com.example.Details","weight":3}`)}
	var d details
	if err := inst.DecodePayload(&d); err != nil || d != (details{"eu", 3}) {
		t.Errorf("DecodePayload into a struct: %+v, %v", d, err)
	}
	var m map[string]any
	if err := inst.DecodePayload(&m); err != nil || len(m) != 2 || m["zone"] != "eu" {
		t.Errorf("DecodePayload into a map: %v, %v", m, err)
	}
	if got := inst.PayloadClass(); got != "com.example.Details" {
		t.Errorf("PayloadClass = %q", got)
	}
	inst.Payload = json.RawMessage(`["java.util.ArrayList",["a","b"]]`)
	var list []string
	if err := inst.DecodePayload(&list); err != nil || strings.Join(list, ",") != "a,b" {
		t.Errorf("DecodePayload of an array: %v, %v", list, err)
	}
	if got := inst.PayloadClass(); got != "java.util.ArrayList" {
		t.Errorf("PayloadClass of an array = %q", got)
	}
	inst.Payload = nil
	d = details{"kept", 1}
	if err := inst.DecodePayload(&d); err != nil || d.Zone != "kept" || inst.PayloadClass() != "" {
		t.Errorf("DecodePayload of no payload: %+v, %v", d, err)
	}
}

// URI specs parse and build as Curator's UriSpec.
func TestURISpec(t *testing.T) {
	spec, err := discovery.ParseURISpec("{scheme}://{ address }:{port}/x{[}y{]}")
	if err != nil {
		t.Fatal(err)
	}
	want := []discovery.URIPart{
		{Value: "scheme", Variable: true}, {Value: "://"}, {Value: "address", Variable: true}, {Value: ":"},
		{Value: "port", Variable: true}, {Value: "/x"}, {Value: "[", Variable: true}, {Value: "y"},
		{Value: "]", Variable: true},
	}
	if !reflect.DeepEqual(spec.Parts, want) {
		t.Errorf("parts %+v\nwant  %+v", spec.Parts, want)
	}
	if got := spec.String(); got != "{scheme}://{address}:{port}/x{[}y{]}" {
		t.Errorf("String = %q", got)
	}
	for _, bad := range []string{"{a{b}}", "a}", "{a"} {
		if _, err := discovery.ParseURISpec(bad); err == nil {
			t.Errorf("ParseURISpec(%q) succeeded", bad)
		}
	}
	if got := spec.Build(map[string]string{"address": "h"}); got != "http://h:/x{y}" {
		t.Errorf("Build = %q", got)
	}

	inst := discovery.Instance{
		Name: "web", ID: "1", Address: "10.0.0.1", Port: new(80), RegistrationTimeUTC: 99,
		ServiceType: discovery.DynamicSequential,
		URISpec:     discovery.MustParseURISpec("{scheme}://{address}:{port}/{name}/{id}?{service-type}&{registration-time-utc}&{ssl-port}&{unknown}"),
	}
	if got := inst.URI(nil); got != "http://10.0.0.1:80/web/1?dynamic_sequential&99&&" {
		t.Errorf("URI = %q", got)
	}
	inst.SSLPort = new(443)
	if got := inst.URI(map[string]string{"unknown": "u", "port": "8"}); got != "https://10.0.0.1:8/web/1?dynamic_sequential&99&443&u" {
		t.Errorf("URI with variables = %q", got)
	}
	inst.URISpec = nil
	if got := inst.URI(nil); got != "" {
		t.Errorf("URI without a spec = %q", got)
	}
}
