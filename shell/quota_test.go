package shell

import (
	"encoding/json"
	"testing"

	"github.com/collie-io/collie/collietest"
)

// With -json, the quota commands print the limits and usage as numbers.
func TestQuotaJSON(t *testing.T) {
	srv := collietest.Start(t)
	run := func(args ...string) string {
		t.Helper()
		status, stdout, stderr := execCommand(t, Config{Server: srv.Addr(), JSON: true}, args...)
		if status != 0 {
			t.Fatalf("%q: status %d, %s%s", args, status, stdout, stderr)
		}
		return stdout
	}
	run("create", "/j", "abc")
	run("create", "/j/k", "de")
	var set jsonQuota
	if err := json.Unmarshal([]byte(run("setquota", "-B", "100", "/j")), &set); err != nil {
		t.Fatal(err)
	}
	if set.Path != "/j" || set.Limits == nil || *set.Limits != (jsonLimits{Count: -1, Bytes: -1, CountHardLimit: -1, ByteHardLimit: 100}) {
		t.Errorf("setquota: %+v %+v", set, set.Limits)
	}
	var list jsonQuota
	if err := json.Unmarshal([]byte(run("listquota", "/j")), &list); err != nil {
		t.Fatal(err)
	}
	if list.Limits == nil || list.Limits.ByteHardLimit != 100 || list.Usage == nil || *list.Usage != (jsonUsage{Count: 2, Bytes: 5}) {
		t.Errorf("listquota: %+v %+v %+v", list, list.Limits, list.Usage)
	}
	var del jsonQuota
	if err := json.Unmarshal([]byte(run("delquota", "-B", "/j")), &del); err != nil {
		t.Fatal(err)
	}
	if del.Limits == nil || del.Limits.ByteHardLimit != -1 {
		t.Errorf("delquota -B: %+v %+v", del, del.Limits)
	}
	run("delquota", "/j")
	var none jsonQuota
	if err := json.Unmarshal([]byte(run("listquota", "/j")), &none); err != nil {
		t.Fatal(err)
	}
	if none.Limits != nil || none.Usage != nil {
		t.Errorf("listquota after delquota: %+v", none)
	}
}
