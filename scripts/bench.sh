#!/usr/bin/env bash
# Runs Collie's benchmarks and prints their results as tables: first the
# micro-benchmarks (codec, tree, state machine, WAL), then the load comparison
# of a Collie server with Apache ZooKeeper 3.8 on this machine
# (TestLoadAgainstZooKeeper in zkcompat, several minutes).
#
# Usage: ./scripts/bench.sh [--micro | --load]
#   --micro   run only the micro-benchmarks
#   --load    run only the load comparison
# Environment:
#   BENCHTIME  -benchtime of each micro-benchmark (default 1s)
#   COUNT      -count of the micro-benchmarks; use 6 or more for benchstat (default 1)
#   OUT        directory for the raw results (default: a new temporary directory)
#   COLLIE_BENCH_DURATION, COLLIE_BENCH_WARMUP, COLLIE_BENCH_NODES,
#   COLLIE_BENCH_ZK_HEAP  settings of the load comparison, see zkcompat/bench_test.go
set -euo pipefail

usage() {
	sed -n '2,15s/^# \{0,1\}//p' "$0"
}

micro=true
load=true
for arg in "$@"; do
	case "$arg" in
	--micro) load=false ;;
	--load) micro=false ;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		echo "bench.sh: unknown argument: $arg" >&2
		usage >&2
		exit 2
		;;
	esac
done

cd "$(dirname "${BASH_SOURCE[0]}")/.."

out="${OUT:-$(mktemp -d -t collie-bench.XXXXXX)}"
mkdir -p "$out"

# Packages whose micro-benchmarks run.
micro_pkgs=(./proto ./server/tree ./server/fsm ./server/storage)

echo "Machine: $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)), $(free -g | awk '/^Mem:/ {print $2}') GiB, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$(go version); $(java -version 2>&1 | head -n1 || echo 'no java')"
echo "Raw results: $out"

# micro_table turns `go test -bench` output into a Markdown table.
micro_table() {
	awk '
	BEGIN {
		print "| benchmark | ns/op | MB/s | B/op | allocs/op |"
		print "|---|---:|---:|---:|---:|"
	}
	/^pkg: / { pkg = $2; sub(/.*\/collie\//, "", pkg) }
	/^Benchmark/ {
		delete v
		for (i = 3; i < NF; i += 2) v[$(i + 1)] = $i
		name = $1
		sub(/-[0-9]+$/, "", name)
		printf "| %s %s | %s | %s | %s | %s |\n", pkg, name, v["ns/op"], ("MB/s" in v ? v["MB/s"] : ""), v["B/op"], v["allocs/op"]
	}'
}

if $micro; then
	echo
	echo "## Micro-benchmarks (-benchtime ${BENCHTIME:-1s}, -count ${COUNT:-1})"
	echo
	go test -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-1s}" -count "${COUNT:-1}" -timeout 60m \
		"${micro_pkgs[@]}" | tee "$out/micro.txt" | micro_table
fi

if $load; then
	echo
	echo "## Collie and ZooKeeper 3.8 on this machine"
	echo
	echo "Client and servers share the same cores: the load generator's CPU is taken from the server's."
	echo
	COLLIE_BENCH=1 COLLIE_BENCH_REPORT="$out/load.md" \
		go test -run '^TestLoadAgainstZooKeeper$' -count 1 -v -timeout 60m ./zkcompat >"$out/load.log" 2>&1 || {
		tail -n 50 "$out/load.log" >&2
		exit 1
	}
	cat "$out/load.md"
fi
