package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/collie-io/collie/collietest"
)

func TestBenchPipeline(t *testing.T) {
	srv := collietest.Start(t)
	bench := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		status := runBench(args, &stdout, &stderr)
		return status, stdout.String(), stderr.String()
	}
	common := []string{"-server", srv.Addr(), "-workload", "pipeline", "-clients", "2", "-duration", "300ms", "-warmup", "0", "-size", "64", "-quiet"}

	// Without -inflight, the pipeline keeps 16 requests of each session
	// in flight, and the report says what it checked.
	status, stdout, stderr := bench(common...)
	if status != 0 || !strings.Contains(stdout, "pipeline (90% reads), 2 clients × 16 in flight") ||
		!strings.Contains(stdout, "read-your-writes: ") || !strings.Contains(stdout, "sent behind a write of their session in progress), no violation") {
		t.Errorf("pipeline: status %d, stdout:\n%s\nstderr:\n%s", status, stdout, stderr)
	}

	status, stdout, stderr = bench(append(common, "-inflight", "4", "-read-ratio", "0.5", "-json")...)
	var report struct {
		Inflight  int     `json:"inflight"`
		ReadRatio float64 `json:"read_ratio"`
		Results   []struct {
			ReadYourWrites *struct {
				Checked    int64 `json:"checked"`
				Violations int64 `json:"violations"`
			} `json:"read_your_writes"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &report); status != 0 || err != nil || report.Inflight != 4 || report.ReadRatio != 0.5 ||
		len(report.Results) != 1 || report.Results[0].ReadYourWrites == nil || report.Results[0].ReadYourWrites.Checked == 0 {
		t.Errorf("pipeline -inflight 4 -json: status %d (%v), stdout:\n%s\nstderr:\n%s", status, err, stdout, stderr)
	}

	// Other workloads keep one request in flight per session.
	status, stdout, stderr = bench("-server", srv.Addr(), "-workload", "set", "-clients", "2", "-duration", "100ms", "-warmup", "0", "-quiet")
	if status != 0 || !strings.Contains(stdout, "2 clients × 1 in flight") || strings.Contains(stdout, "read-your-writes") {
		t.Errorf("set: status %d, stdout:\n%s\nstderr:\n%s", status, stdout, stderr)
	}
}
