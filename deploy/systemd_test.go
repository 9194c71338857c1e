package deploy_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/collie-io/collie/server/config"
)

// unit reads a unit file's settings: key → values, in order, over all
// sections.
func unit(t *testing.T, path string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string][]string{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not key=value", path, line)
		}
		settings[k] = append(settings[k], v)
	}
	return settings
}

// systemdTool returns the path of one of systemd's programs, skipping the
// test without it (failing it in CI, which installs Debian's systemd).
func systemdTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (Debian package systemd) is missing: %v", name, err)
		}
		t.Skipf("%s (Debian package systemd) is missing: %v", name, err)
	}
	return path
}

// installedUnit copies the unit to a temporary directory with its
// ExecStart's binary replaced by one that exists here, which
// systemd-analyze requires, and returns the copy's path.
func installedUnit(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("systemd", "collie.service"))
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "ExecStart=/usr/bin/collie ", "ExecStart="+exe+" ", 1)
	if text == string(data) {
		t.Fatal("collie.service has no ExecStart=/usr/bin/collie")
	}
	path := filepath.Join(t.TempDir(), "collie.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// systemd finds nothing wrong with the unit.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze := systemdTool(t, "systemd-analyze")
	path := installedUnit(t)
	out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// Warnings about the unit (an unknown key, a key in the wrong
	// section) do not fail verify; they name the file.
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, path) || strings.Contains(line, "collie.service") {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
}

// The sandbox keeps the unit's exposure, as systemd-analyze security
// rates it from 0 (locked down) to 10, at 1.5 or less; the README reports
// the score.
func TestSystemdUnitSandbox(t *testing.T) {
	analyze := systemdTool(t, "systemd-analyze")
	path := installedUnit(t)
	out, err := exec.Command(analyze, "security", "--offline=yes", "--no-pager", "--threshold=15", path).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Errorf("systemd-analyze security: exposure above 1.5:\n%s", out)
	} else if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for collie.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security printed no overall exposure:\n%s", out)
	}
	t.Logf("systemd-analyze security: exposure %s", m[1])
}

// The unit, its user and the example zoo.cfg fit together: the server
// reads /etc/collie/zoo.cfg and keeps its data where the unit lets it
// write, as the user that sysusers.d makes.
func TestSystemdUnitFiles(t *testing.T) {
	u := unit(t, filepath.Join("systemd", "collie.service"))
	want := map[string]string{
		"Type":                   "notify", // collie server sends READY=1
		"ExecStart":              "/usr/bin/collie server -c /etc/collie/zoo.cfg",
		"ConfigurationDirectory": "collie",
		"StateDirectory":         "collie",
		"User":                   "collie",
		"ProtectSystem":          "strict",
		"NoNewPrivileges":        "yes",
		"CapabilityBoundingSet":  "",
	}
	for k, v := range want {
		if got := u[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s=%q, want %q", k, got, v)
		}
	}

	cfgPath := filepath.Join("systemd", "zoo.cfg")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(data)
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Fatalf("%s: %v", cfgPath, err)
	}
	stateDir := "/var/lib/" + u["StateDirectory"][0]
	for _, dir := range []string{c.DataDir, c.DataLogDir} {
		if !under(dir, stateDir) {
			t.Errorf("%s: %s is outside %s, the one directory the service may write", cfgPath, dir, stateDir)
		}
	}
	if len(c.Unknown) > 0 {
		t.Errorf("%s has keys Collie does not know: %v", cfgPath, c.Unknown)
	}

	sysusers, err := os.ReadFile(filepath.Join("systemd", "collie.sysusers"))
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for line := range strings.Lines(string(sysusers)) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "u" {
			users = append(users, f[1])
			if home := f[len(f)-1]; home != stateDir {
				t.Errorf("collie.sysusers: %s's home %s, want %s", f[1], home, stateDir)
			}
		}
	}
	if len(users) != 1 || users[0] != u["User"][0] {
		t.Errorf("collie.sysusers makes users %v, want the unit's %s", users, u["User"][0])
	}
}

// systemd-sysusers reads the sysusers.d line and would make the user,
// in an empty root so that nothing here changes.
func TestSystemdSysusers(t *testing.T) {
	sysusers := systemdTool(t, "systemd-sysusers")
	file, err := filepath.Abs(filepath.Join("systemd", "collie.sysusers"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sysusers, "--dry-run", "--root="+root, file).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Creating user 'collie'") {
		t.Errorf("systemd-sysusers --dry-run %s: %v\n%s", file, err, out)
	}
}
