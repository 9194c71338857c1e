// Package zkref runs the real Apache ZooKeeper 3.8, from Debian's zookeeper
// package, as the reference that Collie is compared with: differential tests
// send the same requests to both, and benchmarks measure both in one run.
//
// Start launches a standalone ZooKeeper server for one test. Classpath,
// CuratorClasspath, Java and Python locate the tools that drive real clients
// (ZooKeeper's and Curator's Java libraries, Debian's python3 with kazoo).
//
// The tools come from Debian packages that ./scripts/test.sh installs. When
// they are missing a test is skipped with that hint, except when the
// environment variable CI is "true": then it fails, so that a CI run can never
// pass by skipping the comparison.
package zkref

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// debianJavaDir is where Debian's Java library packages install their jars.
const debianJavaDir = "/usr/share/java"

// ZkCliPath is ZooKeeper's shell, zkCli.sh, as Debian's zookeeper package
// installs it.
const ZkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"

// debianPython is Debian's own interpreter, the one python3-kazoo installs
// into. The python3 found first on PATH may be another one without kazoo.
const debianPython = "/usr/bin/python3"

// installHint tells a developer how to get the missing tools.
const installHint = "run ./scripts/test.sh, which installs them"

// zookeeperJars are the ZooKeeper server and client libraries (package
// libzookeeper-java), an slf4j binding to log4j 1.2, the logging that
// Debian's ZooKeeper configuration is written for, and Netty's codecs. The
// manifest of zookeeper.jar names its other dependencies, so the JVM finds
// them itself; it leaves out two of Netty's, without which Debian's
// ZooKeeper fails every TLS connection: netty-codec.jar on both sides
// (NoClassDefFoundError for ByteToMessageDecoder), netty-resolver.jar in
// the Netty client (AddressResolverGroup).
var zookeeperJars = []string{
	"zookeeper.jar",
	"zookeeper-jute.jar",
	"slf4j-api.jar",
	"slf4j-log4j12.jar",
	"log4j-1.2.jar",
	"netty-codec.jar",
	"netty-resolver.jar",
	// ZooKeeper's snappy-compressed snapshots (Debian's libsnappy-java,
	// which libzookeeper-java depends on).
	"snappy-java.jar",
}

// curatorJars are Apache Curator's client, framework, recipes and service
// discovery (packages libcurator-*-java); their manifests name Guava and the rest.
var curatorJars = []string{
	"curator-recipes.jar",
	"curator-framework.jar",
	"curator-client.jar",
	"curator-x-discovery.jar",
}

// Available reports whether Start can run: it returns nil when a java
// binary and the ZooKeeper jars are installed, and otherwise an error naming
// what is missing.
func Available() error {
	_, javaErr := Java()
	_, cpErr := Classpath()
	return errors.Join(javaErr, cpErr)
}

// Require skips t when err, from Available, Python or the like, says a tool is
// missing, or fails t when the environment variable CI is "true". It does
// nothing when err is nil.
func Require(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("zkref: %v (CI=true, so this fails rather than skips)", err)
	} else {
		t.Skipf("zkref: %v; %s", err, installHint)
	}
}

// Java returns the path of the java binary on PATH.
func Java() (string, error) {
	path, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("java not found: %w", err)
	}
	return path, nil
}

// Classpath returns a Java class path holding ZooKeeper 3.8's server and
// client libraries and a log4j binding, for running ZooKeeper or a Java
// program that uses its client.
func Classpath() (string, error) {
	return jarClasspath(zookeeperJars)
}

// CuratorClasspath returns Classpath extended with Apache Curator's client,
// framework and recipes, for running a Java program built on Curator.
func CuratorClasspath() (string, error) {
	return jarClasspath(slices.Concat(curatorJars, zookeeperJars))
}

// jarClasspath joins the named jars of debianJavaDir into a class path,
// failing with the list of those that are not installed.
func jarClasspath(names []string) (string, error) {
	paths := make([]string, 0, len(names))
	var missing []string
	for _, name := range names {
		path := filepath.Join(debianJavaDir, name)
		if _, err := os.Stat(path); err != nil {
			missing = append(missing, path)
			continue
		}
		paths = append(paths, path)
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("jars not installed: %s", strings.Join(missing, ", "))
	}
	return strings.Join(paths, string(os.PathListSeparator)), nil
}

// Python returns the path of Debian's python3 after checking, once per
// process, that it can import kazoo, the Python ZooKeeper client.
func Python() (string, error) {
	return findPython()
}

var findPython = sync.OnceValues(func() (string, error) {
	if _, err := os.Stat(debianPython); err != nil {
		return "", fmt.Errorf("python3 with kazoo: %w", err)
	}
	out, err := exec.Command(debianPython, "-c", "import kazoo").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s cannot import kazoo: %w: %s", debianPython, err, strings.TrimSpace(string(out)))
	}
	return debianPython, nil
})
