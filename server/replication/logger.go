package replication

import (
	"context"
	"fmt"
	"log/slog"
	"os"
)

// raftLogger adapts a *slog.Logger to raft's Logger. Raft's chatty Info
// goes to Debug; Panicf still panics, since raft calls it only on a broken
// invariant.
type raftLogger struct{ l *slog.Logger }

func newRaftLogger(l *slog.Logger) *raftLogger { return &raftLogger{l.With("component", "raft")} }

func (r *raftLogger) Debug(v ...any)                 { r.l.Debug(fmt.Sprint(v...)) }
func (r *raftLogger) Debugf(format string, v ...any) { r.l.Debug(fmt.Sprintf(format, v...)) }
func (r *raftLogger) Info(v ...any)                  { r.l.Debug(fmt.Sprint(v...)) }
func (r *raftLogger) Infof(format string, v ...any)  { r.l.Debug(fmt.Sprintf(format, v...)) }
func (r *raftLogger) Warning(v ...any)               { r.l.Warn(fmt.Sprint(v...)) }
func (r *raftLogger) Warningf(format string, v ...any) {
	r.l.Warn(fmt.Sprintf(format, v...))
}
func (r *raftLogger) Error(v ...any)                 { r.l.Error(fmt.Sprint(v...)) }
func (r *raftLogger) Errorf(format string, v ...any) { r.l.Error(fmt.Sprintf(format, v...)) }
func (r *raftLogger) Fatal(v ...any) {
	r.l.Log(context.Background(), slog.LevelError, fmt.Sprint(v...))
	os.Exit(1)
}
func (r *raftLogger) Fatalf(format string, v ...any) { r.Fatal(fmt.Sprintf(format, v...)) }
func (r *raftLogger) Panic(v ...any)                 { panic(fmt.Sprint(v...)) }
func (r *raftLogger) Panicf(format string, v ...any) { panic(fmt.Sprintf(format, v...)) }
