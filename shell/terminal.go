package shell

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

// completionTimeout bounds the listing of a parent node for tab completion,
// so that a slow server delays a key press, not the shell.
const completionTimeout = 3 * time.Second

// asTerminal returns the descriptor of in when the shell reads from a
// terminal and prints to one: a shell whose output goes elsewhere reads
// its input as a script.
func asTerminal(in io.Reader, out io.Writer) (int, bool) {
	for _, v := range []any{out, in} {
		f, ok := v.(*os.File)
		if !ok {
			return 0, false
		}
		fd, ok := descriptor(f)
		if !ok || !term.IsTerminal(fd) {
			return 0, false
		}
		if v == in {
			return fd, true
		}
	}
	return 0, false
}

// descriptor returns f's file descriptor without File.Fd, which would put
// it in blocking mode: a read of a file in the poller can be interrupted by
// closing the file. The number stays valid while f is open.
func descriptor(f *os.File) (int, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	fd := -1
	if err := rc.Control(func(d uintptr) { fd = int(d) }); err != nil {
		return 0, false
	}
	return fd, true
}

// terminalSource reads lines from a terminal with line editing. The
// terminal is raw only while a line is read: commands run with it as it was,
// so that Ctrl-C interrupts a command rather than the shell.
type terminalSource struct {
	out    io.Writer
	fd     int
	t      *term.Terminal
	cooked *term.State
}

func (s *terminalSource) readLine(prompt string) (string, error) {
	if w, h, err := term.GetSize(s.fd); err == nil && w > 0 && h > 0 {
		_ = s.t.SetSize(w, h) // the window may have changed; the last size serves otherwise
	}
	if _, err := term.MakeRaw(s.fd); err != nil {
		return "", err
	}
	s.t.SetPrompt(prompt)
	line, err := s.t.ReadLine()
	_ = term.Restore(s.fd, s.cooked) // a terminal that cannot be restored is gone
	switch {
	case errors.Is(err, term.ErrPasteIndicator):
		err = nil // a pasted line is a line
	case errors.Is(err, io.EOF):
		_, _ = io.WriteString(s.out, "\n") // leave the caller's prompt a line of its own
	}
	return line, err
}

// runTerminal runs the shell on a terminal, reading in (whose descriptor
// is fd) and printing to out: everything prints through the line editor,
// which redraws the prompt and the line being typed around watch events
// that arrive meanwhile. Ctrl-D or Ctrl-C at the prompt ends the shell;
// Ctrl-C while a command runs cancels the command.
func (sh *Shell) runTerminal(ctx context.Context, in io.Reader, fd int, out io.Writer) int {
	cooked, err := term.GetState(fd)
	if err != nil {
		return sh.runLines(ctx, newLineReader(in), nil)
	}
	defer term.Restore(fd, cooked)
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{in, out}, "")
	sh.out = &printer{stdout: t, stderr: t}
	t.AutoCompleteCallback = func(line string, pos int, key rune) (string, int, bool) {
		if key != '\t' {
			return "", 0, false
		}
		return sh.completeLine(ctx, t, line, pos)
	}
	src := &terminalSource{out: out, fd: fd, t: t, cooked: cooked}
	return sh.runLines(ctx, src, func(ctx context.Context, run func(context.Context) int) int {
		cctx, stop := signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
		return run(cctx)
	})
}

// completeLine completes the word before the cursor: a command name at the
// start of the line, or a path, from the children of its parent on the
// server. A unique completion is taken; otherwise the longest common
// prefix is, and when there is none to add the choices are listed.
func (sh *Shell) completeLine(ctx context.Context, out io.Writer, line string, pos int) (string, int, bool) {
	head, tail := line[:pos], line[pos:]
	start := strings.LastIndexAny(head, " \t") + 1
	word := head[start:]
	var dir string // the part of a path that stays as it is
	var candidates []string
	switch {
	case strings.HasPrefix(word, "/"):
		slash := strings.LastIndexByte(word, '/')
		dir, word = word[:slash+1], word[slash+1:]
		parent := dir
		if parent != "/" {
			parent = strings.TrimSuffix(parent, "/")
		}
		for _, name := range sh.childrenOf(ctx, parent) {
			if strings.HasPrefix(name, word) {
				candidates = append(candidates, name)
			}
		}
	case strings.TrimSpace(head[:start]) == "":
		for _, c := range commands {
			if strings.HasPrefix(c.name, word) {
				candidates = append(candidates, c.name)
			}
		}
	}
	if len(candidates) == 0 {
		return line, pos, true
	}
	slices.Sort(candidates)
	common := commonPrefix(candidates)
	completed := head[:start] + dir + common
	switch {
	case len(candidates) == 1 && dir == "":
		completed += " " // a command, ready for its arguments
	case len(candidates) > 1 && common == word:
		_, _ = io.WriteString(out, strings.Join(candidates, "  ")+"\n")
	}
	return completed + tail, len(completed), true
}

// childrenOf lists a node's children for completion; nothing when it
// cannot.
func (sh *Shell) childrenOf(ctx context.Context, path string) []string {
	if !sh.connected() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	names, _, err := sh.client.Children(ctx, path)
	if err != nil {
		return nil
	}
	return names
}

// commonPrefix returns the longest prefix of all of words, which are
// sorted.
func commonPrefix(words []string) string {
	first, last := words[0], words[len(words)-1]
	n := 0
	for n < len(first) && n < len(last) && first[n] == last[n] {
		n++
	}
	for n > 0 && n < len(first) && !utf8.RuneStart(first[n]) {
		n-- // not into the middle of a character
	}
	return first[:n]
}
