#!/usr/bin/env bash
# Runs Collie's benchmarks and prints their results as tables: first the
# micro-benchmarks (codec, tree, state machine, WAL), then the load comparison
# of a Collie server with Apache ZooKeeper 3.8 on this machine
# (TestLoadAgainstZooKeeper in zkcompat, several minutes). --ensemble runs the
# comparison of a 3-server Collie ensemble with a 3-server ZooKeeper ensemble
# instead (TestEnsembleLoadAgainstZooKeeper: load, leader kill, catch-up).
#
# Usage: ./scripts/bench.sh [--micro | --load | --ensemble]
#   --micro     run only the micro-benchmarks
#   --load      run only the standalone load comparison
#   --ensemble  run only the ensemble comparison
# Environment:
#   BENCHTIME  -benchtime of each micro-benchmark (default 1s)
#   COUNT      -count of the micro-benchmarks; use 6 or more for benchstat (default 1)
#   OUT        directory for the raw results (default: a new temporary directory)
#   COLLIE_BENCH_DURATION, COLLIE_BENCH_WARMUP, COLLIE_BENCH_NODES,
#   COLLIE_BENCH_ZK_HEAP  settings of the load comparison, see zkcompat/bench_test.go
set -euo pipefail

usage() {
	sed -n '2,18s/^# \{0,1\}//p' "$0"
}

micro=true
load=true
ensemble=false
for arg in "$@"; do
	case "$arg" in
	--micro) load=false ;;
	--load) micro=false ;;
	--ensemble)
		micro=false
		load=false
		ensemble=true
		;;
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

# comparison TEST VAR NAME runs zkcompat's benchmark TEST, which runs only
# when VAR=1, keeps its log and report as NAME.log and NAME.md, and prints the
# report.
comparison() {
	env "$2=1" COLLIE_BENCH_REPORT="$out/$3.md" \
		go test -run "^$1\$" -count 1 -v -timeout 60m ./zkcompat >"$out/$3.log" 2>&1 || {
		tail -n 50 "$out/$3.log" >&2
		exit 1
	}
	cat "$out/$3.md"
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
	comparison TestLoadAgainstZooKeeper COLLIE_BENCH load
fi

if $ensemble; then
	echo
	echo "## A 3-server Collie ensemble and a 3-server ZooKeeper 3.8 ensemble on this machine"
	echo
	echo "Six server processes and the load generator share the same cores."
	echo
	comparison TestEnsembleLoadAgainstZooKeeper COLLIE_BENCH_ENSEMBLE ensemble
fi
