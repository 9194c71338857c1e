package config

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// property is one entry of a Java properties text.
type property struct {
	key, value string
	line       int // 1-based line on which the entry starts
}

// parseProperties reads text in the format of java.util.Properties.load,
// which is how ZooKeeper reads zoo.cfg:
//
//   - a line whose first non-blank character is '#' or '!' is a comment;
//   - a line ending in an odd number of backslashes continues on the next
//     line, whose leading blanks are dropped;
//   - the key ends at the first unescaped '=', ':' or blank; blanks and at
//     most one '=' or ':' between key and value are skipped;
//   - \t \n \r \f and \uXXXX are escapes, and a backslash before any other
//     character stands for that character.
//
// Java reads the bytes as ISO-8859-1; this reads them as UTF-8, so that a
// non-ASCII directory name means what the person who wrote it meant.
// Entries are returned in file order, duplicates included.
func parseProperties(text string) ([]property, error) {
	var props []property
	lineNo := 0
	rest := text
	for rest != "" {
		var line string
		line, rest = cutLine(rest)
		lineNo++
		start := lineNo
		line = trimBlanksLeft(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		var logical strings.Builder
		for continuesOnNextLine(line) {
			logical.WriteString(line[:len(line)-1])
			if rest == "" {
				line = ""
				break
			}
			line, rest = cutLine(rest)
			lineNo++
			line = trimBlanksLeft(line)
		}
		logical.WriteString(line)

		key, value, err := splitEntry(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		props = append(props, property{key: key, value: value, line: start})
	}
	return props, nil
}

// cutLine splits off the first line, ended by "\n", "\r" or "\r\n".
func cutLine(s string) (line, rest string) {
	i := strings.IndexAny(s, "\r\n")
	if i < 0 {
		return s, ""
	}
	if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
		return s[:i], s[i+2:]
	}
	return s[:i], s[i+1:]
}

// isBlank reports whether c separates tokens in a properties line.
func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimBlanksLeft(s string) string {
	i := 0
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return s[i:]
}

func continuesOnNextLine(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitEntry separates a logical line into its unescaped key and value.
func splitEntry(s string) (key, value string, err error) {
	keyEnd, valueStart := len(s), len(s)
	hasSeparator := false
	escaped := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !escaped && (c == '=' || c == ':') {
			keyEnd, valueStart, hasSeparator = i, i+1, true
			break
		}
		if !escaped && isBlank(c) {
			keyEnd, valueStart = i, i+1
			break
		}
		escaped = c == '\\' && !escaped
	}
	for valueStart < len(s) {
		c := s[valueStart]
		if !isBlank(c) {
			if hasSeparator || (c != '=' && c != ':') {
				break
			}
			hasSeparator = true
		}
		valueStart++
	}
	if key, err = unescape(s[:keyEnd]); err != nil {
		return "", "", err
	}
	if value, err = unescape(s[valueStart:]); err != nil {
		return "", "", err
	}
	return key, value, nil
}

// unescape resolves backslash escapes. \uXXXX escapes are UTF-16 code
// units, as in Java, so a surrogate pair written as two escapes becomes one
// character.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	units := make([]uint16, 0, len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r != '\\' {
			units = utf16.AppendRune(units, r)
			continue
		}
		if i == len(s) {
			break
		}
		switch s[i] {
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`malformed \uxxxx escape in %q`, s)
			}
			v, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf(`malformed \uxxxx escape in %q`, s)
			}
			units = append(units, uint16(v))
			i += 5
			continue
		case 't':
			r, size = '\t', 1
		case 'n':
			r, size = '\n', 1
		case 'r':
			r, size = '\r', 1
		case 'f':
			r, size = '\f', 1
		default:
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		units = utf16.AppendRune(units, r)
		i += size
	}
	return string(utf16.Decode(units)), nil
}

// redacted stands for a secret's value wherever the configuration is shown.
const redacted = "********"

// IsSecretKey reports whether a zoo.cfg key's value is a secret that must
// never be shown: a password (a store's, the SASL super user's), or the
// digest super user's password hash, which can be attacked offline. A
// key naming a file that holds a password (passwordPath) is not one.
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	if strings.HasSuffix(k, "passwordpath") {
		return false
	}
	return strings.Contains(k, "password") || strings.Contains(k, "superdigest")
}

// redactSecrets returns zoo.cfg text with the value of every secret key
// (IsSecretKey) replaced, for the admin server's initial_configuration,
// which ZooKeeper answers with the file as it is, passwords included.
// Other lines are kept as written, comments included; lines end in "\n".
func redactSecrets(text string) string {
	var b strings.Builder
	for rest := text; rest != ""; {
		var line string
		line, rest = cutLine(rest)
		trimmed := trimBlanksLeft(line)
		if trimmed == "" || trimmed[0] == '#' || trimmed[0] == '!' {
			b.WriteString(line + "\n")
			continue
		}
		key, _, err := splitEntry(trimmed)
		if err != nil || !IsSecretKey(key) {
			b.WriteString(line + "\n")
			for continuesOnNextLine(line) && rest != "" {
				line, rest = cutLine(rest)
				b.WriteString(line + "\n")
			}
			continue
		}
		b.WriteString(key + "=" + redacted + "\n")
		for continuesOnNextLine(line) && rest != "" {
			line, rest = cutLine(rest)
		}
	}
	return b.String()
}
