// Tests of the packaging: the container image's Dockerfile, the systemd
// unit and the Kubernetes example. What can run here runs (systemd-analyze
// on the unit, the configuration each of them gives the server); the
// rest is read and checked against what the server does.
package deploy_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/zooenv"
)

// instruction is one Dockerfile instruction, its continuation lines
// joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ENV, ...
	args string
}

// dockerfile is the image's Dockerfile: the instructions before the first
// FROM, the build stage and the final one.
type dockerfile struct {
	global, build, final []instruction
}

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("container", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var global []instruction
	var stages [][]instruction
	var pending string
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || (line == "" && pending == "") {
			continue
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			pending += rest + " "
			continue
		}
		line, pending = pending+line, ""
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			global = append(global, in)
		} else {
			stages[len(stages)-1] = append(stages[len(stages)-1], in)
		}
	}
	if len(stages) != 2 {
		t.Fatalf("the Dockerfile has %d stages, want a build stage and the image", len(stages))
	}
	return dockerfile{global: global, build: stages[0], final: stages[1]}
}

// all returns the arguments of every instruction cmd of a stage.
func all(stage []instruction, cmd string) []string {
	var args []string
	for _, in := range stage {
		if in.cmd == cmd {
			args = append(args, in.args)
		}
	}
	return args
}

// one returns the arguments of the one instruction cmd of a stage.
func one(t *testing.T, stage []instruction, cmd string) string {
	t.Helper()
	args := all(stage, cmd)
	if len(args) != 1 {
		t.Fatalf("%d %s instructions in the stage, want one", len(args), cmd)
	}
	return args[0]
}

// execForm reads an instruction's JSON array.
func execForm(t *testing.T, args string) []string {
	t.Helper()
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil {
		t.Fatalf("%q is not in exec form (a JSON array): %v", args, err)
	}
	return argv
}

// env is the environment the image gives the server.
func (d dockerfile) env(t *testing.T) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, args := range all(d.final, "ENV") {
		for _, kv := range strings.Fields(args) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || strings.ContainsAny(v, `"'$`) {
				t.Fatalf("ENV %s: write NAME=value pairs without quotes or expansions", args)
			}
			env[k] = v
		}
	}
	return env
}

// serverConfig is the configuration the server makes of env, as
// collie server -zoo-env does without a mounted zoo.cfg.
func serverConfig(t *testing.T, env map[string]string) (zooenv.Env, config.Config) {
	t.Helper()
	e, err := zooenv.Generate(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("the variables %v: %v", env, err)
	}
	c, err := config.Parse(e.ZooCfg)
	if err == nil {
		c, err = c.ForServer(e.ID)
	}
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Fatalf("the zoo.cfg made of %v: %v\n%s", env, err, e.ZooCfg)
	}
	return e, c
}

// under reports whether path is dir or inside it.
func under(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func TestDockerfile(t *testing.T) {
	d := readDockerfile(t)

	// The build: a static binary without the build machine's paths, with
	// the Go of go.mod.
	build := strings.Join(all(d.build, "RUN"), "\n")
	for _, want := range []string{"CGO_ENABLED=0", "go build -trimpath", "./cmd/collie"} {
		if !strings.Contains(build, want) {
			t.Errorf("the build stage does not run %q:\n%s", want, build)
		}
	}
	gomod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var goVersion string
	for line := range strings.Lines(string(gomod)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "go "); ok {
			parts := strings.Split(v, ".")
			goVersion = parts[0] + "." + parts[1]
		}
	}
	if args := strings.Fields(strings.Join(all(d.global, "ARG"), " ")); !slices.Contains(args, "GO_VERSION="+goVersion) {
		t.Errorf("ARG %v: the build stage's Go is not go.mod's %s", args, goVersion)
	}

	// Not root.
	user := one(t, d.final, "USER")
	if uid, _, _ := strings.Cut(user, ":"); uid == "0" || uid == "root" {
		t.Errorf("USER %s: the server must not run as root", user)
	}

	// The binary the entrypoint runs is the one built.
	entrypoint := execForm(t, one(t, d.final, "ENTRYPOINT"))
	if len(entrypoint) != 1 || !slices.ContainsFunc(all(d.final, "COPY"), func(c string) bool {
		return strings.HasPrefix(c, "--from=build ") && strings.HasSuffix(c, " "+entrypoint[0])
	}) {
		t.Errorf("ENTRYPOINT %v is not the binary the build stage copies in", entrypoint)
	}
	if cmd := execForm(t, one(t, d.final, "CMD")); !slices.Equal(cmd, []string{"server", "-zoo-env"}) {
		t.Errorf("CMD %v, want server -zoo-env", cmd)
	}
	hc := one(t, d.final, "HEALTHCHECK")
	_, hcCmd, ok := strings.Cut(hc, "CMD ")
	if !ok || !slices.Equal(execForm(t, hcCmd), []string{entrypoint[0], "health", "-zoo-env"}) {
		t.Errorf("HEALTHCHECK %s, want CMD [%q, \"health\", \"-zoo-env\"]", hc, entrypoint[0])
	}

	// The variables of the image make a server whose data is on the
	// volume and whose ports are exposed.
	e, c := serverConfig(t, d.env(t))
	volumes := execForm(t, one(t, d.final, "VOLUME"))
	for _, dir := range []string{c.DataDir, c.DataLogDir} {
		if !slices.ContainsFunc(volumes, func(v string) bool { return under(dir, v) }) {
			t.Errorf("%s is on no volume of %v", dir, volumes)
		}
	}
	if !slices.ContainsFunc(all(d.final, "COPY"), func(c string) bool {
		return strings.Contains(c, "--chown="+user) && slices.ContainsFunc(volumes, func(v string) bool { return strings.HasSuffix(c, " "+v) })
	}) {
		t.Errorf("no COPY --chown=%s makes the volume's mount point the server's: a new volume would not be writable", user)
	}
	if e.ConfDir == "" || slices.ContainsFunc(volumes, func(v string) bool { return under(e.ConfDir, v) }) {
		t.Errorf("ZOO_CONF_DIR %q must be a directory of its own, to mount a zoo.cfg in", e.ConfDir)
	}
	exposed := map[int]bool{}
	for _, p := range strings.Fields(strings.Join(all(d.final, "EXPOSE"), " ")) {
		n, err := strconv.Atoi(strings.TrimSuffix(p, "/tcp"))
		if err != nil {
			t.Fatalf("EXPOSE %s", p)
		}
		exposed[n] = true
	}
	ports := map[string]int{"client": c.ClientPort, "admin": c.AdminServerPort, "metricsProvider.httpPort": 7000}
	for _, s := range c.Servers {
		ports["peer"], ports["election"] = s.PeerPort, s.ElectionPort
	}
	for name, p := range ports {
		if !exposed[p] {
			t.Errorf("the %s port %d is not exposed (EXPOSE %v)", name, p, slices.Sorted(maps.Keys(exposed)))
		}
	}
}
