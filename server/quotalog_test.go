package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A message is logged at once, its repeats counted and logged once the
// interval has passed or another message comes, as ZooKeeper's RateLogger
// does.
func TestQuotaLogRateLimits(t *testing.T) {
	var buf bytes.Buffer
	q := quotaLog{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))}
	start := time.Unix(1000, 0)
	a := "Quota exceeded: /a [current count=4, hardCountLimit=3]"
	b := "Quota exceeded: /b [current bytes=9, softByteLimit=8]"
	q.report(a, start)
	for i := range 5 {
		q.report(a, start.Add(time.Duration(i)*time.Millisecond))
	}
	q.report(a, start.Add(quotaLogInterval))
	q.report(a, start.Add(quotaLogInterval+time.Millisecond))
	q.report(b, start.Add(quotaLogInterval+2*time.Millisecond))
	want := []string{
		`level=WARN msg="` + a + `"`,
		`level=WARN msg="` + a + `" repeated=6`,
		`level=WARN msg="` + a + `" repeated=1`,
		`level=WARN msg="` + b + `"`,
	}
	if got := strings.Split(strings.TrimSpace(buf.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("logged\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
