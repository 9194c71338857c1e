package metrics

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Family is a metric family as Parse reads it.
type Family struct {
	Type   string // counter, gauge, summary, histogram or untyped
	Points []Point
}

// Point is one sample line.
type Point struct {
	Name   string // the family's name, or it with _sum, _count...
	Labels map[string]string
	Value  float64
}

// LabelNames returns the names of the labels the family's samples carry,
// sorted, without duplicates; a summary's quantile among them.
func (f *Family) LabelNames() []string {
	seen := map[string]bool{}
	var names []string
	for _, p := range f.Points {
		for name := range p.Labels {
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// Value returns the value of the family's sample named name with exactly
// the labels given as name, value pairs; ok is false when there is none,
// or no family (f is nil).
func (f *Family) Value(name string, labels ...string) (v float64, ok bool) {
	if f == nil {
		return 0, false
	}
	for _, p := range f.Points {
		if p.Name != name || len(p.Labels) != len(labels)/2 {
			continue
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if p.Labels[labels[i]] != labels[i+1] {
				match = false
			}
		}
		if match {
			return p.Value, true
		}
	}
	return 0, false
}

// Parse reads Prometheus's text format (version 0.0.4) into families by
// name: families declared by a TYPE line without samples too, as
// ZooKeeper's provider writes those of sets that have none yet. It is
// strict, for tests and tools that compare scrapes: a malformed line, a
// sample before its family's TYPE line or a family typed twice is an
// error.
func Parse(r io.Reader) (map[string]*Family, error) {
	families := map[string]*Family{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, ok := strings.Cut(rest, " ")
			if !ok || !validName(name) || families[name] != nil {
				return nil, fmt.Errorf("metrics: line %d: bad or repeated TYPE line %q", lineNo, line)
			}
			switch typ {
			case "counter", "gauge", "summary", "histogram", "untyped":
			default:
				return nil, fmt.Errorf("metrics: line %d: unknown type in %q", lineNo, line)
			}
			families[name] = &Family{Type: typ}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p, err := parsePoint(line)
		if err != nil {
			return nil, fmt.Errorf("metrics: line %d: %w", lineNo, err)
		}
		f := families[p.Name]
		if f == nil {
			for _, suffix := range []string{"_sum", "_count", "_bucket"} {
				if base, ok := strings.CutSuffix(p.Name, suffix); ok && families[base] != nil {
					f = families[base]
				}
			}
		}
		if f == nil {
			return nil, fmt.Errorf("metrics: line %d: sample %s before its TYPE line", lineNo, p.Name)
		}
		f.Points = append(f.Points, p)
	}
	return families, sc.Err()
}

// parsePoint reads `name{label="value",...} value [timestamp]`.
func parsePoint(line string) (Point, error) {
	p := Point{Labels: map[string]string{}}
	end := strings.IndexAny(line, "{ ")
	if end < 0 {
		return p, fmt.Errorf("no value in %q", line)
	}
	p.Name, line = line[:end], line[end:]
	if !validName(p.Name) {
		return p, fmt.Errorf("bad metric name in %q", p.Name)
	}
	if strings.HasPrefix(line, "{") {
		line = line[1:]
		for {
			line = strings.TrimLeft(line, " ")
			if rest, ok := strings.CutPrefix(line, "}"); ok {
				line = rest
				break
			}
			name, rest, ok := strings.Cut(line, "=\"")
			if !ok || !validName(name) {
				return p, fmt.Errorf("bad label in %q", line)
			}
			var value strings.Builder
			i := 0
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
					switch rest[i] {
					case 'n':
						value.WriteByte('\n')
					default:
						value.WriteByte(rest[i])
					}
					continue
				}
				value.WriteByte(rest[i])
			}
			if i == len(rest) {
				return p, fmt.Errorf("unterminated label value in %q", line)
			}
			if _, dup := p.Labels[name]; dup {
				return p, fmt.Errorf("label %s given twice", name)
			}
			p.Labels[name] = value.String()
			line = strings.TrimPrefix(rest[i+1:], ",")
		}
	}
	fields := strings.Fields(line)
	if len(fields) < 1 || len(fields) > 2 {
		return p, fmt.Errorf("bad value in %q", line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return p, fmt.Errorf("bad value %q", fields[0])
	}
	p.Value = v
	return p, nil
}

func validName(s string) bool {
	for i, c := range s {
		if !(c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}
