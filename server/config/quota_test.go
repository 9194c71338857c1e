package config

import (
	"errors"
	"path/filepath"
	"testing"
)

// zookeeper.enforceQuota is a Java system property that ZooKeeper sets
// from zoo.cfg's enforceQuota; Collie reads both spellings, and strictly.
func TestParseEnforceQuota(t *testing.T) {
	for text, want := range map[string]bool{
		"dataDir=/d\n":                                        false,
		"dataDir=/d\nenforceQuota=true\n":                     true,
		"dataDir=/d\nzookeeper.enforceQuota=TRUE\n":           true,
		"dataDir=/d\nenforceQuota=true\nenforceQuota=false\n": false,
	} {
		c, err := Parse([]byte(text))
		if err != nil || c.EnforceQuota != want {
			t.Errorf("Parse(%q): EnforceQuota %v, %v; want %v", text, c.EnforceQuota, err, want)
		}
		if len(c.Unknown) > 0 {
			t.Errorf("Parse(%q): unknown keys %q", text, c.Unknown)
		}
	}
	_, err := Parse([]byte("dataDir=/d\nenforceQuota=yes\n"))
	if ve := (*ValueError)(nil); !errors.As(err, &ve) || ve.Key != "enforceQuota" {
		t.Errorf("enforceQuota=yes: %v, want a ValueError for the key", err)
	}
}

// -Dzookeeper.enforceQuota in SERVER_JVMFLAGS or JVMFLAGS counts unless
// the file sets the key, as for ZooKeeper, which sets the property from the
// file after the JVM read its flags.
func TestEnforceQuotaFromJVMFlags(t *testing.T) {
	tests := []struct {
		file    string
		env     map[string]string
		want    bool
		wantErr bool
	}{
		{"", map[string]string{"SERVER_JVMFLAGS": "-Xmx1g -Dzookeeper.enforceQuota=true"}, true, false},
		{"", map[string]string{"JVMFLAGS": "-Dzookeeper.enforceQuota=true"}, true, false},
		{"", map[string]string{"JVMFLAGS": "-DenforceQuota=true"}, false, false},
		{"enforceQuota=false\n", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.enforceQuota=true"}, false, false},
		{"enforceQuota=true\n", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.enforceQuota=false"}, true, false},
		{"", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.enforceQuota=1"}, false, true},
	}
	for _, tt := range tests {
		c, err := Parse([]byte("dataDir=/d\n" + tt.file))
		if err != nil {
			t.Fatal(err)
		}
		err = c.enforceQuotaFromJVMFlags(func(k string) string { return tt.env[k] })
		if (err != nil) != tt.wantErr || c.EnforceQuota != tt.want {
			t.Errorf("file %q, env %v: EnforceQuota %v, %v; want %v (error %v)", tt.file, tt.env, c.EnforceQuota, err, tt.want, tt.wantErr)
		}
	}
}

// Load reads -Dzookeeper.enforceQuota from SERVER_JVMFLAGS when the file
// does not set enforceQuota.
func TestLoadEnforceQuotaFromJVMFlags(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"zoo.cfg": "dataDir=" + dir + "\nclientPort=2181\n"})
	t.Setenv("JVMFLAGS", "")
	t.Setenv("SERVER_JVMFLAGS", "-Xmx1g -Dzookeeper.enforceQuota=true")
	c, err := Load(filepath.Join(dir, "zoo.cfg"))
	if err != nil || !c.EnforceQuota {
		t.Fatalf("Load: EnforceQuota %v, %v; want true", c.EnforceQuota, err)
	}
	t.Setenv("SERVER_JVMFLAGS", "-Dzookeeper.enforceQuota=on")
	if _, err := Load(filepath.Join(dir, "zoo.cfg")); err == nil {
		t.Fatal("Load with -Dzookeeper.enforceQuota=on: no error")
	}
}
