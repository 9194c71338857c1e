package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/collie-io/collie/server/config"
	"github.com/collie-io/collie/server/zooenv"
)

// zooEnvSource is the zoo.cfg a container runs with: the one mounted in
// ZOO_CONF_DIR, or else the one the ZOO_* variables describe.
type zooEnvSource struct {
	name string // the mounted file, or what errors call the generated text
	text []byte
	env  zooenv.Env
}

// generatedName stands for the generated zoo.cfg in messages.
const generatedName = "zoo.cfg from the ZOO_* variables"

// readZooEnv reads the variables through lookup and looks for a mounted
// zoo.cfg, as the zookeeper image's entrypoint does; it writes nothing.
func readZooEnv(lookup func(string) (string, bool)) (zooEnvSource, error) {
	env, err := zooenv.Generate(withHostname(lookup))
	if err != nil {
		return zooEnvSource{}, err
	}
	mounted := filepath.Join(env.ConfDir, "zoo.cfg")
	text, err := os.ReadFile(mounted)
	switch {
	case err == nil:
		return zooEnvSource{name: mounted, text: text, env: env}, nil
	case errors.Is(err, fs.ErrNotExist):
		return zooEnvSource{name: generatedName, text: env.ZooCfg, env: env}, nil
	default:
		return zooEnvSource{}, err
	}
}

// withHostname adds the machine's host name as HOSTNAME when the
// environment lacks it: a container's runtime usually sets it, but
// nothing guarantees it, and a StatefulSet's pod is named by it.
func withHostname(lookup func(string) (string, bool)) func(string) (string, bool) {
	return func(key string) (string, bool) {
		v, ok := lookup(key)
		if key == "HOSTNAME" && v == "" {
			if h, err := os.Hostname(); err == nil {
				return h, true
			}
		}
		return v, ok
	}
}

// loadZooEnv is how `collie server -zoo-env` gets its configuration: the
// zoo.cfg of readZooEnv, with the myid file written first when it is
// missing and the configuration lists servers. It returns where the
// zoo.cfg came from too.
func loadZooEnv(lookup func(string) (string, bool)) (config.Config, string, error) {
	src, err := readZooEnv(lookup)
	if err != nil {
		return config.Config{}, "", err
	}
	if parsed, err := config.Parse(src.text); err == nil && len(parsed.Servers) > 0 {
		if err := ensureMyID(parsed, src.env); err != nil {
			return config.Config{}, "", err
		}
	}
	// LoadData reports a zoo.cfg that does not parse.
	cfg, err := config.LoadData(src.name, src.text)
	return cfg, src.name, err
}

// ensureMyID writes the myid file of a configuration that lists servers
// when it is missing, and checks an existing one against an id a variable
// gave: a server that took another's id would vote twice.
func ensureMyID(c config.Config, env zooenv.Env) error {
	path := filepath.Join(c.DataDir, "myid")
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		id, err := config.ParseMyID(data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if env.IDGiven && id != env.ID {
			return fmt.Errorf("%s holds server id %d, but the environment says %d (ZOO_MY_ID or the pod's ordinal): "+
				"the data directory belongs to another server; give this server its own volume", path, id, env.ID)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	case !env.IDGiven && !c.Standalone:
		return fmt.Errorf("%s does not exist and ZOO_MY_ID is not set: each server of an ensemble needs its id, the N of its server.N line", path)
	}
	if err := os.MkdirAll(c.DataDir, 0o750); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(strconv.FormatUint(env.ID, 10)+"\n"), 0o640)
}
