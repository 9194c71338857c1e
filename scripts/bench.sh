#!/usr/bin/env bash
# Runs Collie's benchmarks and prints their results as tables: first the
# micro-benchmarks (codec, tree, state machine, WAL), then the load comparison
# of a Collie server with Apache ZooKeeper 3.8 on this machine
# (TestLoadAgainstZooKeeper in zkcompat, several minutes: setData, getData,
# a pipelined mix checked for read-your-writes, many znodes). --ensemble runs
# the comparison of a 3-server Collie ensemble with a 3-server ZooKeeper
# ensemble instead (TestEnsembleLoadAgainstZooKeeper: load, leader kill,
# catch-up). --tls runs the TLS comparison instead
# (TestTLSLoadAgainstZooKeeper: each server's TLS port against its own
# plaintext port, and the rate of new sessions over each).
# --recipes runs the lock benchmark: a Collie mutex against Curator's
# InterProcessMutex on the same server (BenchmarkMutex in recipe/lock).
#
# Usage: ./scripts/bench.sh [--micro | --load | --ensemble | --tls | --recipes]
#   --micro     run only the micro-benchmarks
#   --load      run only the standalone load comparison
#   --ensemble  run only the ensemble comparison
#   --tls       run only the TLS comparison
#   --recipes   run only the lock benchmark against Curator
# Environment:
#   BENCHTIME  -benchtime of each micro-benchmark (default 1s)
#   COUNT      -count of the micro-benchmarks; use 6 or more for benchstat (default 1)
#   OUT        directory for the raw results (default: a new temporary directory)
#   COLLIE_BENCH_DURATION, COLLIE_BENCH_WARMUP, COLLIE_BENCH_NODES,
#   COLLIE_BENCH_ZK_HEAP  settings of the load comparison, see zkcompat/bench_test.go
#   LOCK_BENCHTIME  -benchtime of the lock benchmark (default 2000x)
set -euo pipefail

usage() {
	sed -n '2,28s/^# \{0,1\}//p' "$0"
}

micro=true
load=true
ensemble=false
tlscmp=false
recipes=false
for arg in "$@"; do
	case "$arg" in
	--micro) load=false ;;
	--load) micro=false ;;
	--ensemble)
		micro=false
		load=false
		ensemble=true
		;;
	--tls)
		micro=false
		load=false
		tlscmp=true
		;;
	--recipes)
		micro=false
		load=false
		recipes=true
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

if $tlscmp; then
	echo
	echo "## What TLS costs Collie and ZooKeeper 3.8 on this machine"
	echo
	echo "Each server's TLS port against its own plaintext port, loaded by the same client on the same cores."
	echo
	comparison TestTLSLoadAgainstZooKeeper COLLIE_BENCH tls
fi

# lock_table pairs the Go and Curator rows of BenchmarkMutex by contenders
# and prints their acquisitions per second and handoff times as ratios.
lock_table() {
	awk '
	/^BenchmarkMutex\// {
		split($1, part, "/")
		side = part[2]
		n = part[3]
		sub(/^contenders=/, "", n)
		sub(/-[0-9]+$/, "", n)
		for (i = 3; i < NF; i += 2) v[side, n, $(i + 1)] = $i
		seen[n] = 1
	}
	END {
		for (n in seen) {
			ga = v["go", n, "acq/s"]; ca = v["curator", n, "acq/s"]
			gh = v["go", n, "handoff-µs"]; ch = v["curator", n, "handoff-µs"]
			printf "| %s | %.0f | %.0f | **%.2f** | %.0f µs | %.0f µs | **%.2f** |\n", n, ga, ca, (ca > 0 ? ga / ca : 0), gh, ch, (ch > 0 ? gh / ch : 0)
		}
	}' | sort -t'|' -k2 -n
}

lock_header() {
	echo "| contenders | Collie mutex acq/s | Curator acq/s | ratio | Collie handoff | Curator handoff | ratio |"
	echo "|---:|---:|---:|---:|---:|---:|---:|"
}

if $recipes; then
	echo
	echo "## A Collie mutex against Curator's InterProcessMutex, on the same Collie server"
	echo
	echo "Each contender has a session of its own and takes and releases the lock as fast as it can; Curator runs in one JVM warmed up first. Ratios are Collie / Curator: above 1 for acq/s and below 1 for handoff say Collie did better."
	echo
	go test -run '^$' -bench '^BenchmarkMutex$' -benchtime "${LOCK_BENCHTIME:-2000x}" -count 1 -timeout 30m ./recipe/lock/ |
		tee "$out/lock.txt" | lock_table >"$out/lock.md"
	lock_header
	cat "$out/lock.md"
fi
