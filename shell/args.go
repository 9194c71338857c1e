package shell

import (
	"strings"
)

// splitLine breaks a command line into words as zkCli.sh does: words are
// separated by white space, and a word that starts with a quote (' or ")
// runs to the same quote, white space included, the quotes removed. There
// is no escaping; an unmatched quote is dropped.
func splitLine(line string) []string {
	var words []string
	i := 0
	for i < len(line) {
		c := line[i]
		switch {
		case isSpace(c):
			i++
		case c == '"' || c == '\'':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				i++ // zkCli's pattern cannot match here and moves on
				continue
			}
			words = append(words, line[i+1:i+1+end])
			i += end + 2
		default:
			j := i
			for j < len(line) && !isSpace(line[j]) {
				j++
			}
			words = append(words, line[i:j])
			i = j
		}
	}
	return words
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// options is a parsed command line: the command and its positional
// arguments in args (args[0] is the command), and the options given.
type options struct {
	args  []string
	flags map[byte]string // option letter -> its value ("" for a switch)
	order []byte          // the option letters, in the order given
}

func (o options) has(flag byte) bool {
	_, ok := o.flags[flag]
	return ok
}

// parseOptions parses words (the command first) against spec, which lists
// the option letters a command knows, each followed by ':' when it takes a
// value ("sv:" is -s and -v value). It follows the rules of the option
// parser zkCli.sh uses: options may come anywhere, "--" ends them, switches
// may be joined ("-es"), a value may be attached ("-v2") or be the next
// word, even when that word is a negative number; any other word starting
// with "-" is an error.
func parseOptions(words []string, spec string) (options, error) {
	o := options{flags: map[byte]string{}}
	takesValue := func(c byte) (known, value bool) {
		i := strings.IndexByte(spec, c)
		if i < 0 || c == ':' {
			return false, false
		}
		return true, i+1 < len(spec) && spec[i+1] == ':'
	}
	var pending byte // an option still waiting for its value
	onlyArgs := false
	for n, w := range words {
		if n == 0 {
			o.args = append(o.args, w)
			continue
		}
		if pending != 0 {
			if !strings.HasPrefix(w, "-") || len(w) == 1 || isNegativeNumber(w) || !isOptionWord(w, takesValue) {
				o.set(pending, w)
				pending = 0
				continue
			}
			return o, usageError("Missing argument for option: " + string(pending))
		}
		switch {
		case onlyArgs || w == "-" || !strings.HasPrefix(w, "-"):
			o.args = append(o.args, w)
		case w == "--":
			onlyArgs = true
		case strings.HasPrefix(w, "--"):
			return o, usageError("Unrecognized option: " + w)
		default:
			for i := 1; i < len(w); i++ {
				known, value := takesValue(w[i])
				if !known {
					return o, usageError("Unrecognized option: " + w)
				}
				if !value {
					o.set(w[i], "")
					continue
				}
				if i+1 < len(w) {
					o.set(w[i], w[i+1:])
				} else {
					pending = w[i]
				}
				break
			}
		}
	}
	if pending != 0 {
		return o, usageError("Missing argument for option: " + string(pending))
	}
	return o, nil
}

func (o *options) set(flag byte, value string) {
	o.flags[flag] = value
	o.order = append(o.order, flag)
}

// isOptionWord reports whether w, which starts with "-", names an option
// the command knows (as its first letter).
func isOptionWord(w string, takesValue func(byte) (bool, bool)) bool {
	if strings.HasPrefix(w, "--") {
		return false
	}
	known, _ := takesValue(w[1])
	return known
}

func isNegativeNumber(w string) bool {
	if len(w) < 2 || w[0] != '-' {
		return false
	}
	for i := 1; i < len(w); i++ {
		if (w[i] < '0' || w[i] > '9') && w[i] != '.' {
			return false
		}
	}
	return true
}
