package quota

import (
	"errors"
	"testing"
)

// The texts and what ZooKeeper 3.8's StatsTrack makes of them: the
// values read back, and the text it writes.
func TestParseAndString(t *testing.T) {
	tests := []struct {
		in                         string
		count, bytes, chard, bhard int64
		out                        string
	}{
		{"", -1, -1, -1, -1, "count=-1,bytes=-1"},
		{"count=3,bytes=-1", 3, -1, -1, -1, "count=3,bytes=-1"},
		{"count=3,bytes=-1=;byteHardLimit=-1;countHardLimit=4", 3, -1, 4, -1, "count=3,bytes=-1=;byteHardLimit=-1;countHardLimit=4"},
		{"count=2,bytes=1", 2, 1, -1, -1, "count=2,bytes=1"},
		// Runs of separators, either kind; a trailing one is ignored.
		{"bytes=5;;,count=1,", 1, 5, -1, -1, "count=1,bytes=5"},
		// Unknown keys are kept, sorted after count and bytes.
		{"foo=1;count=7", 7, -1, -1, -1, "count=7,bytes=-1=;foo=1"},
		{"zz=1,Zz=2,count=0,bytes=0", 0, 0, -1, -1, "count=0,bytes=0=;Zz=2;zz=1"},
		// An empty value reads as -1; what follows a second '=' is ignored.
		{"count==5,bytes=7=", -1, 7, -1, -1, "count=-1,bytes=7"},
		// A later pair overrides an earlier one.
		{"count=1,count=2", 2, -1, -1, -1, "count=2,bytes=-1"},
		// Java's parseLong: a sign, digits of other scripts.
		{"count=+4,bytes=\u0663", 4, 3, -1, -1, "count=4,bytes=3"},
		{"count=-9223372036854775808", -9223372036854775808, -1, -1, -1, "count=-9223372036854775808,bytes=-1"},
		{",", -1, -1, -1, -1, "count=-1,bytes=-1"},
		{"=5", -1, -1, -1, -1, "count=-1,bytes=-1=;=5"},
	}
	for _, tt := range tests {
		s, err := Parse([]byte(tt.in))
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if got := [4]int64{s.Count(), s.Bytes(), s.CountHardLimit(), s.ByteHardLimit()}; got != [4]int64{tt.count, tt.bytes, tt.chard, tt.bhard} {
			t.Errorf("Parse(%q) = %v, want %v", tt.in, got, [4]int64{tt.count, tt.bytes, tt.chard, tt.bhard})
		}
		if got := s.String(); got != tt.out {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.in, got, tt.out)
		}
	}
}

// Where StatsTrack throws, Parse fails.
func TestParseMalformed(t *testing.T) {
	for _, in := range []string{"count", "count=", "count=,bytes=", ",count=1", "count=1,=", "count=x", "count=1.5",
		"count=9223372036854775808", "count=-", "count=a=b", "count=\U0001D7D9"} {
		if s, err := Parse([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) = %v, %v; want ErrMalformed", in, s, err)
		}
	}
	if _, err := Parse(nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("Parse(nil) = %v; want ErrMalformed", err)
	}
}

func TestUsage(t *testing.T) {
	if got := string(Usage(2, 1)); got != "count=2,bytes=1" {
		t.Errorf("Usage(2, 1) = %q", got)
	}
}

func TestKeyAndGoverning(t *testing.T) {
	keys := map[string]string{
		"/zookeeper/quota/a":      "/a",
		"/zookeeper/quota/a/b":    "/a/b",
		"/zookeeper/quota/a/ /b":  "/a/b",
		"/zookeeper/quotas/a":     "/s/a",
		"/zookeeper/quota":        "",
		"/zookeeper/quota/ ":      "",
		"/zookeeper":              "",
		"/app/zookeeper/quota/a":  "",
		"/zookeeper/quota/a b/c ": "/a b/c ",
	}
	for dir, want := range keys {
		if got := Key(dir); got != want {
			t.Errorf("Key(%q) = %q, want %q", dir, got, want)
		}
	}
	set := map[string]bool{"/a": true, "/a/b/c": true, "/x y": true}
	has := func(k string) bool { return set[k] }
	governing := map[string]string{
		"/a": "/a", "/a/b": "/a", "/a/b/c": "/a/b/c", "/a/b/c/d": "/a/b/c", "/ab": "", "/": "", "/b/a": "",
		"/x y/z": "/x y", "/a/ /b": "/a",
	}
	for path, want := range governing {
		if got := Governing(path, has); got != want {
			t.Errorf("Governing(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name         string
		limits       string
		stats        string
		count, bytes int64
		over         []string
		refused      bool
	}{
		{"under", "count=5,bytes=-1", "count=4,bytes=0", 1, 0, nil, false},
		{"soft count", "count=3,bytes=-1", "count=3,bytes=0", 1, 4, []string{"Quota exceeded: /a [current count=4, softCountLimit=3]"}, false},
		{"hard count", "count=-1,bytes=-1=;countHardLimit=3", "count=3,bytes=0", 1, 0, []string{"Quota exceeded: /a [current count=4, hardCountLimit=3]"}, true},
		{"hard wins over soft", "count=10,bytes=-1=;countHardLimit=3", "count=3,bytes=0", 1, 0, []string{"Quota exceeded: /a [current count=4, hardCountLimit=3]"}, true},
		{"soft count, hard bytes", "count=1,bytes=-1=;byteHardLimit=2", "count=1,bytes=0", 1, 3,
			[]string{"Quota exceeded: /a [current count=2, softCountLimit=1]", "Quota exceeded: /a [current bytes=3, hardByteLimit=2]"}, true},
		// A setData changes no count: the count limit is not checked.
		{"set", "count=0,bytes=-1", "count=5,bytes=0", 0, 1, nil, false},
		{"shrinking", "count=-1,bytes=-1=;byteHardLimit=2", "count=1,bytes=9", 0, -3, []string{"Quota exceeded: /a [current bytes=6, hardByteLimit=2]"}, true},
		{"no limits", "count=-1,bytes=-1", "garbage", 1, 1, nil, false},
	}
	for _, tt := range tests {
		over, refused, err := Check("/a", []byte(tt.limits), true, []byte(tt.stats), true, tt.count, tt.bytes)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		var got []string
		for _, e := range over {
			got = append(got, e.String())
		}
		if refused != tt.refused || len(got) != len(tt.over) {
			t.Errorf("%s: %q refused=%v, want %q refused=%v", tt.name, got, refused, tt.over, tt.refused)
			continue
		}
		for i := range got {
			if got[i] != tt.over[i] {
				t.Errorf("%s: %q, want %q", tt.name, got, tt.over)
			}
		}
	}
	if _, _, err := Check("/a", []byte("count=1,bytes=-1"), true, []byte("count="), true, 1, 0); !errors.Is(err, ErrMalformed) {
		t.Errorf("unreadable stats: %v, want ErrMalformed", err)
	}
	if _, _, err := Check("/a", []byte("count"), true, nil, false, 1, 0); !errors.Is(err, ErrMalformed) {
		t.Errorf("unreadable limits: %v, want ErrMalformed", err)
	}
	if over, refused, err := Check("/a", nil, false, nil, false, 1, 0); over != nil || refused || err != nil {
		t.Errorf("no limits node: %v %v %v", over, refused, err)
	}
	if over, refused, err := Check("/a", []byte("count=-1,bytes=-1=;countHardLimit=0"), true, nil, false, 1, 0); over != nil || refused || err != nil {
		t.Errorf("no stats node: %v %v %v", over, refused, err)
	}
}

// FuzzParse: whatever Parse reads, it writes text that reads back the
// same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"count=3,bytes=-1=;byteHardLimit=-1;countHardLimit=4", "count=2,bytes=1", "foo=1;count=7", "count==5", ",", "=5", "count=\u0663"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		text := s.String()
		again, err := Parse([]byte(text))
		if err != nil {
			t.Fatalf("Parse(%q) = %q, which does not parse: %v", data, text, err)
		}
		if again.String() != text {
			t.Fatalf("Parse(%q) = %q, read back as %q", data, text, again.String())
		}
	})
}
