#!/usr/bin/env bash
# Runs the test suites of two ZooKeeper clients, go-zookeeper and Kazoo, as
# their authors wrote them, first against Apache ZooKeeper 3.8 and then
# against Collie, and prints every test's result on both side by side. Each
# suite's own harness writes a zoo.cfg and starts the servers; for Collie, a
# stand-in for java (scripts/client-suites/java) runs `collie server -c` on
# that zoo.cfg where the harness runs ZooKeeper. Exits 1 if a test that
# passes on ZooKeeper fails on Collie, except the tests of features Collie
# does not have yet (reconfig), listed in this script.
#
# Usage: ./scripts/client-suites.sh [options]
#   --suite NAME     go-zookeeper or kazoo (default: both, one after the other)
#   --server NAME    zookeeper or collie: run against that server only
#   --run PATTERN    only the tests PATTERN selects: a go test -run regexp
#                    for go-zookeeper, a pytest -k expression for Kazoo
#   --no-install     do not install missing Debian packages
# Environment:
#   COLLIE        a collie binary to test (default: one built from this tree)
#   OUT           directory for the logs and results (default: a new
#                 temporary directory, kept)
#   TEST_TIMEOUT  seconds one test may take before it counts as failed
#                 (default 120 for go-zookeeper, whose slowest test takes
#                 about 50 s on ZooKeeper, and 60 for Kazoo, about 10 s)
set -euo pipefail

usage() {
	sed -n '2,25s/^# \{0,1\}//p' "$0"
}

suites=(go-zookeeper kazoo)
servers=(zookeeper collie)
run=""
install=true
while [ $# -gt 0 ]; do
	case "$1" in
	--suite)
		[ $# -ge 2 ] || { usage >&2; exit 2; }
		case "$2" in
		go-zookeeper | kazoo) suites=("$2") ;;
		*) echo "client-suites.sh: unknown suite: $2" >&2; usage >&2; exit 2 ;;
		esac
		shift
		;;
	--server)
		[ $# -ge 2 ] || { usage >&2; exit 2; }
		case "$2" in
		zookeeper | collie) servers=("$2") ;;
		*) echo "client-suites.sh: unknown server: $2" >&2; usage >&2; exit 2 ;;
		esac
		shift
		;;
	--run)
		[ $# -ge 2 ] || { usage >&2; exit 2; }
		run="$2"
		shift
		;;
	--no-install) install=false ;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		echo "client-suites.sh: unknown argument: $1" >&2
		usage >&2
		exit 2
		;;
	esac
	shift
done

cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/debian-packages.sh
repo=$(pwd)

# Tests of what Collie does not implement yet. A test listed here may fail
# on Collie without failing the run; an entry is a test name or the prefix
# of one (suite:name).
excluded=(
	# reconfig: Collie's membership is fixed by its configuration.
	go-zookeeper:TestIntegration_IncrementalReconfig
	go-zookeeper:TestIntegration_Reconfig
	kazoo:test_client.TestReconfig.
)

python=/usr/bin/python3 # Debian's, which has kazoo; not whichever is first on PATH
real_java=/usr/bin/java
zk_home=/usr/share/zookeeper

# Debian packages the suites need: the reference server, Kazoo and what its
# tests import, pytest with its per-test timeout.
packages=(
	zookeeper
	python3-kazoo
	python3-pytest
	python3-pytest-timeout
	python3-mock
	python3-objgraph
	python3-gevent
	python3-eventlet
)

step() {
	printf '\n==> %s\n' "$*"
}

if $install; then
	install_missing client-suites.sh "${packages[@]}"
fi

out="${OUT:-$(mktemp -d -t collie-client-suites.XXXXXX)}"
mkdir -p "$out"
out=$(cd "$out" && pwd)
echo "Logs and results: $out"

# Both harnesses make their servers' directories under TMPDIR.
export TMPDIR="$out/tmp"
mkdir -p "$TMPDIR"

collie="${COLLIE:-}"
if [ -z "$collie" ]; then
	step "building collie"
	go build -o "$out/bin/collie" ./cmd/collie
	collie="$out/bin/collie"
fi
collie=$(realpath "$collie")

# zkServer.sh runs $JAVA, which Debian's zkEnv.sh sets to /usr/bin/java; it
# reads zkEnv.sh from its own directory. A directory holding a link to
# ZooKeeper's zkServer.sh and a zkEnv.sh that names another java makes the
# same script run that java: ZooKeeper's or the stand-in.
make_zk_bin() { # dir java
	mkdir -p "$1"
	ln -sf "$zk_home/bin/zkServer.sh" "$1/zkServer.sh"
	cat >"$1/zkEnv.sh" <<-EOF
		. "$zk_home/bin/zkEnv.sh"
		JAVA="$2"
		ZOO_LOG_DIR="$out/zookeeper-log"
	EOF
}
make_zk_bin "$out/zookeeper-bin/zookeeper" "$real_java"
make_zk_bin "$out/zookeeper-bin/collie" "$repo/scripts/client-suites/java"

# The version of the ZooKeeper package ("3.8.0"), which both harnesses are
# told: go-zookeeper's runs its reconfig tests only when ZK_VERSION says
# 3.5 or later, as its own CI sets it.
zk_version=$(dpkg-query -W -f='${Version}' zookeeper | sed 's/[-+~].*//')

# env_for prints the environment (NAME=value lines) that makes a harness
# start the given server.
env_for() {
	echo "ZK_VERSION=$zk_version"
	case "$1" in
	zookeeper)
		echo "ZOOKEEPER_BIN_PATH=$out/zookeeper-bin/zookeeper"
		echo "PATH=$PATH"
		;;
	collie)
		echo "ZOOKEEPER_BIN_PATH=$out/zookeeper-bin/collie"
		echo "PATH=$repo/scripts/client-suites:$PATH"
		echo "COLLIE=$collie"
		echo "REAL_JAVA=$real_java"
		;;
	esac
}

# in_group runs a command in dir, in a process group of its own, and once
# it has exited kills what is left of the group: a test that times out
# leaves the servers its harness started running. Interrupted, it kills the
# group at once.
in_group() { # dir command...
	local dir=$1 pid status=0
	shift
	(cd "$dir" && exec setsid "$@") &
	pid=$!
	trap 'kill -KILL -- "-$pid" 2>/dev/null; exit 130' INT TERM
	wait "$pid" || status=$?
	trap - INT TERM
	kill -KILL -- "-$pid" 2>/dev/null || true
	return "$status"
}

# go-zookeeper's test helper waits for its servers with FLWSrvr, whose
# pattern knows the srvr banner of ZooKeeper 3.4 to 3.6 only ("built on
# 01/02/2006 15:04 MST"): against any 3.8-era server it never succeeds. In a
# copy of the module, the wait instead asks srvr until every server says its
# Mode (a server that does not serve says it is not serving), which works
# for 3.4 to 3.8 and Collie alike. Nothing else in the module changes.
prepare_go_zookeeper() {
	local version dir
	version=$(go list -m -f '{{.Version}}' github.com/go-zookeeper/zk)
	dir=$(go mod download -json "github.com/go-zookeeper/zk@$version" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	if [ -z "$dir" ] || [ ! -d "$dir" ]; then
		echo "client-suites.sh: go mod download found no go-zookeeper $version" >&2
		exit 1
	fi
	gozk="$out/go-zookeeper"
	rm -rf "$gozk"
	cp -r "$dir" "$gozk"
	chmod -R u+w "$gozk"
	local helper="$gozk/server_help_test.go"
	local from='_, ok := FLWSrvr(serverAddrs, time.Second)'
	if [ "$(grep -cF "$from" "$helper")" -ne 1 ]; then
		echo "client-suites.sh: go-zookeeper $version: the wait to patch is not in server_help_test.go" >&2
		exit 1
	fi
	sed -i "s/_, ok := FLWSrvr(serverAddrs, time.Second)/ok := serversServe(serverAddrs, time.Second)/" "$helper"
	cat >"$gozk/serving_test.go" <<-'EOF'
		package zk

		import (
			"strings"
			"time"
		)

		// serversServe reports whether every server answers srvr with its
		// Mode, as a ZooKeeper server of any version does once it serves.
		func serversServe(servers []string, timeout time.Duration) bool {
			for _, s := range FormatServers(servers) {
				resp, err := fourLetterWord(s, "srvr", timeout)
				if err != nil || !strings.Contains(string(resp), "\nMode: ") {
					return false
				}
			}
			return true
		}
	EOF
	echo "go-zookeeper $version copied to $gozk; its servers' wait patched"
	(cd "$gozk" && GOFLAGS=-mod=mod GOWORK=off go test -c -o "$out/bin/go-zookeeper.test" .)
}

# run_go_zookeeper runs each test of go-zookeeper in a process of its own,
# so that a test that hangs fails alone; it writes "name<TAB>result" lines.
run_go_zookeeper() { # server
	local server=$1 results="$out/go-zookeeper.$1.results" logs="$out/logs/go-zookeeper.$1"
	mkdir -p "$logs"
	: >"$results"
	local tests
	tests=$("$out/bin/go-zookeeper.test" -test.list '.*' | grep '^Test' || true)
	if [ -n "$run" ]; then
		tests=$(grep -E -- "$run" <<<"$tests" || true)
	fi
	local n total start result name server_env
	mapfile -t server_env < <(env_for "$server")
	total=$(grep -c . <<<"$tests" || true)
	n=0
	while read -r name; do
		[ -n "$name" ] || continue
		n=$((n + 1))
		start=$SECONDS
		in_group "$gozk" env "${server_env[@]}" "$out/bin/go-zookeeper.test" \
			-test.run "^${name}\$" -test.v -test.count=1 -test.timeout "${TEST_TIMEOUT:-120}s" \
			>"$logs/$name.log" 2>&1 || true
		if grep -q "^--- PASS: ${name} " "$logs/$name.log"; then
			result=pass
		elif grep -q "^--- SKIP: ${name} " "$logs/$name.log"; then
			result=skip
		else
			result=FAIL
		fi
		printf '%s\t%s\n' "$name" "$result" >>"$results"
		printf '  [%d/%d] %-50s %-4s %3ds\n' "$n" "$total" "$name" "$result" $((SECONDS - start))
	done <<<"$tests"
}

# run_kazoo runs Kazoo's tests in one pytest process, as its authors do: its
# harness starts a 3-server ensemble once and shares it between tests. It
# writes "name<TAB>result" lines, names as test_file.Class.test.
run_kazoo() { # server
	local server=$1 results="$out/kazoo.$1.results" dir="$out/kazoo.$1"
	mkdir -p "$dir" "$out/logs"
	local args=(-m pytest --pyargs kazoo.tests -v -p no:cacheprovider
		--timeout "${TEST_TIMEOUT:-60}" --junitxml "$dir/junit.xml")
	if [ -n "$run" ]; then
		args+=(-k "$run")
	fi
	local server_env
	mapfile -t server_env < <(env_for "$server")
	in_group "$dir" env "${server_env[@]}" ZOOKEEPER_VERSION="$zk_version" \
		ZOOKEEPER_CLASSPATH=/usr/share/java/zookeeper.jar "$python" "${args[@]}" 2>&1 | tee "$out/logs/kazoo.$server.log" |
		sed -nE 's#^(.*/)?([^ /]+\.py::[^ ]+) (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS).*#  \2 \3#p' || true
	"$python" - "$dir/junit.xml" >"$results" <<-'EOF'
		import sys
		import xml.etree.ElementTree as ET
		results = {}
		for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
		    name = case.get("classname").removeprefix("kazoo.tests.") + "." + case.get("name")
		    tags = {child.tag for child in case}
		    if "failure" in tags or "error" in tags:
		        result = "FAIL"
		    elif "skipped" in tags:
		        result = "skip"
		    else:
		        result = "pass"
		    # A test whose teardown failed after it passed is listed twice.
		    if results.get(name) != "FAIL":
		        results[name] = result
		for name, result in results.items():
		    print(f"{name}\t{result}")
	EOF
}

for suite in "${suites[@]}"; do
	if [ "$suite" = go-zookeeper ]; then
		step "go-zookeeper: building its tests"
		prepare_go_zookeeper
	fi
	for server in "${servers[@]}"; do
		step "$suite on $server"
		suite_start=$SECONDS
		"run_${suite//-/_}" "$server"
		echo "$suite on $server: $(cut -f2 "$out/$suite.$server.results" | sort | uniq -c | xargs) in $((SECONDS - suite_start))s"
	done
done

# is_excluded reports whether suite:name is in the list of exclusions.
is_excluded() {
	local entry
	for entry in "${excluded[@]}"; do
		case "$1" in
		"$entry" | "$entry"*) return 0 ;;
		esac
	done
	return 1
}

step "results"
regressions=0
for suite in "${suites[@]}"; do
	echo
	printf '%-72s %-9s %-9s\n' "$suite" "${servers[0]}" "${servers[1]:-}"
	files=()
	for server in "${servers[@]}"; do
		files+=("$out/$suite.$server.results")
	done
	# One line per test: its name, then its result on each server ("-"
	# when it did not run there).
	rows=$(awk -F'\t' -v servers="${#files[@]}" '
		FNR == 1 { f++ }
		{ if (!($1 in seen)) { seen[$1] = 1; names[++n] = $1 }; r[f, $1] = $2 }
		END {
			for (i = 1; i <= n; i++) {
				line = names[i]
				for (j = 1; j <= servers; j++) line = line "\t" ((j, names[i]) in r ? r[j, names[i]] : "-")
				print line
			}
		}' "${files[@]}" | sort)
	while IFS=$'\t' read -r name first second; do
		[ -n "$name" ] || continue
		note=""
		if [ "${#servers[@]}" -eq 2 ] && [ "$first" = pass ] && [ "$second" != pass ]; then
			if is_excluded "$suite:$name"; then
				note="(excluded: not implemented)"
			else
				note="<- fails on Collie only"
				regressions=$((regressions + 1))
			fi
		fi
		printf '%-72s %-9s %-9s %s\n' "$name" "$first" "${second:-}" "$note"
	done <<<"$rows"
done

echo
echo "Logs: $out/logs"
if [ "$regressions" -gt 0 ]; then
	echo "$regressions test(s) pass on ZooKeeper and fail on Collie"
	exit 1
fi
