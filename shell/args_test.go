package shell

import (
	"reflect"
	"testing"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
)

func TestSplitLine(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"ls /", []string{"ls", "/"}},
		{"  get   -s\t/a  ", []string{"get", "-s", "/a"}},
		{`create /a "hello world"`, []string{"create", "/a", "hello world"}},
		{`create /a 'it is'`, []string{"create", "/a", "it is"}},
		{`create /a "abc`, []string{"create", "/a", "abc"}},
		{`create /a a"b c"`, []string{"create", "/a", `a"b`, `c"`}},
		{`set /a ""`, []string{"set", "/a", ""}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := splitLine(tt.line); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitLine(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

func TestParseOptions(t *testing.T) {
	tests := []struct {
		words   []string
		spec    string
		args    []string
		flags   map[byte]string
		wantErr string
	}{
		{[]string{"ls", "-s", "-w", "/a"}, "swR", []string{"ls", "/a"}, map[byte]string{'s': "", 'w': ""}, ""},
		{[]string{"create", "-es", "/q"}, "esct:", []string{"create", "/q"}, map[byte]string{'e': "", 's': ""}, ""},
		{[]string{"set", "-v2", "/a", "d"}, "sv:", []string{"set", "/a", "d"}, map[byte]string{'v': "2"}, ""},
		{[]string{"set", "-v", "-1", "/a", "d"}, "sv:", []string{"set", "/a", "d"}, map[byte]string{'v': "-1"}, ""},
		{[]string{"set", "/a", "--", "-1"}, "sv:", []string{"set", "/a", "-1"}, map[byte]string{}, ""},
		{[]string{"removewatches", "/a", "-c"}, "cdal", []string{"removewatches", "/a"}, map[byte]string{'c': ""}, ""},
		{[]string{"deleteall", "/a", "-b", "10"}, "b:", []string{"deleteall", "/a"}, map[byte]string{'b': "10"}, ""},
		{[]string{"create", "-st", "5", "/a"}, "esct:", []string{"create", "/a"}, map[byte]string{'s': "", 't': "5"}, ""},
		{[]string{"create", "/a", "-"}, "esct:", []string{"create", "/a", "-"}, map[byte]string{}, ""},
		{[]string{"set", "/a", "-1"}, "sv:", nil, nil, "Unrecognized option: -1"},
		{[]string{"get", "-x", "/a"}, "sw", nil, nil, "Unrecognized option: -x"},
		{[]string{"get", "-sx", "/a"}, "sw", nil, nil, "Unrecognized option: -sx"},
		{[]string{"get", "--s", "/a"}, "sw", nil, nil, "Unrecognized option: --s"},
		{[]string{"set", "/a", "d", "-v"}, "sv:", nil, nil, "Missing argument for option: v"},
		{[]string{"set", "-v", "-s", "/a", "d"}, "sv:", nil, nil, "Missing argument for option: v"},
	}
	for _, tt := range tests {
		got, err := parseOptions(tt.words, tt.spec)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("parseOptions(%q) error = %v, want %q", tt.words, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseOptions(%q): %v", tt.words, err)
			continue
		}
		if !reflect.DeepEqual(got.args, tt.args) || !reflect.DeepEqual(got.flags, tt.flags) {
			t.Errorf("parseOptions(%q) = %q %q, want %q %q", tt.words, got.args, got.flags, tt.args, tt.flags)
		}
	}
}

func TestMessages(t *testing.T) {
	tests := []struct{ got, want string }{
		{keeperMessage(proto.ErrNoNode, "/x"), "Node does not exist: /x"},
		{keeperMessage(proto.ErrBadVersion, "/x"), "version No is not valid : /x"},
		{keeperMessage(proto.ErrNoWatcher, "/x"), "KeeperErrorCode = No such watcher for /x"},
		{keeperMessage(proto.ErrConnectionLoss, ""), "KeeperErrorCode = ConnectionLoss"},
		{keeperMessage(proto.Code(-999), "/x"), "KeeperErrorCode = Unknown error -999 for /x"},
		{pathMessage(""), "Path length must be > 0"},
		{pathMessage("x"), "Path must start with / character"},
		{pathMessage("/x/"), "Path must not end with / character"},
		{pathMessage("//x"), `Invalid path string "//x" caused by empty node name specified @1`},
		{pathMessage("/a/../b"), `Invalid path string "/a/../b" caused by relative paths not allowed @4`},
		{juteString("e%,}\n"), "'e%25%2C%7D%0A"},
		{proto.PermString(client.PermAll), "cdrwa"},
		{proto.PermString(client.PermRead | client.PermAdmin), "ra"},
		{hex(0x1a), "0x1a"},
		{hex(-1), "0xffffffffffffffff"},
		{javaText(nil), "null"},
		{javaText([]byte{'a', 0xff, 'b'}), "a\uFFFDb"},
		{joinList([]string{"a", "b"}), "[a, b]"},
		{joinList(nil), "[]"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestParseACL(t *testing.T) {
	acl, warnings := parseACL("world:anyone:cdrwa,bad,digest:u:h=:rz,auth::a")
	want := []client.ACL{
		{Perms: client.PermAll, ID: client.ID{Scheme: "world", ID: "anyone"}},
		{Perms: client.PermRead, ID: client.ID{Scheme: "digest", ID: "u:h="}},
		{Perms: client.PermAdmin, ID: client.ID{Scheme: "auth", ID: ""}},
	}
	if !reflect.DeepEqual(acl, want) {
		t.Errorf("acl = %v, want %v", acl, want)
	}
	wantWarnings := []string{"bad does not have the form scheme:id:perm", "Unknown perm type: z"}
	if !reflect.DeepEqual(warnings, wantWarnings) {
		t.Errorf("warnings = %q, want %q", warnings, wantWarnings)
	}
	if acl, _ := parseACL("x"); acl == nil || len(acl) != 0 {
		t.Errorf("parseACL(x) = %#v, want an empty, non-nil ACL", acl)
	}
}

// x509 ids hold commas, which zkCli.sh cannot read: every piece is
// refused there. The shell reads them; what zkCli.sh reads is unchanged.
func TestParseACLCommas(t *testing.T) {
	x509 := func(id string, perms int32) client.ACL {
		return client.ACL{Perms: perms, ID: client.ID{Scheme: "x509", ID: id}}
	}
	world := client.ACL{Perms: client.PermRead, ID: client.ID{Scheme: "world", ID: "anyone"}}
	tests := []struct {
		text     string
		want     []client.ACL
		warnings []string
	}{
		{"x509:CN=a,O=b:cdrwa", []client.ACL{x509("CN=a,O=b", client.PermAll)}, nil},
		{`world:anyone:r,x509:CN=Bob\, Jr.,OU=x,O=b:ra`, []client.ACL{world, x509(`CN=Bob\, Jr.,OU=x,O=b`, client.PermRead|client.PermAdmin)}, nil},
		{"x509:CN=a:r,O=b:r", []client.ACL{x509("CN=a", client.PermRead)}, []string{"O=b:r does not have the form scheme:id:perm"}},
		{"x509:CN=a,O=b", []client.ACL{}, []string{"x509:CN=a does not have the form scheme:id:perm", "O=b does not have the form scheme:id:perm"}},
		{"bad,world:anyone:r", []client.ACL{world}, []string{"bad does not have the form scheme:id:perm"}},
	}
	for _, tt := range tests {
		acl, warnings := parseACL(tt.text)
		if !reflect.DeepEqual(acl, tt.want) || !reflect.DeepEqual(warnings, tt.warnings) {
			t.Errorf("parseACL(%q) = %v, %q; want %v, %q", tt.text, acl, warnings, tt.want, tt.warnings)
		}
	}
}

func TestCommonPrefix(t *testing.T) {
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{"getAcl", "getAllChildrenNumber"}, "getA"},
		{[]string{"ls"}, "ls"},
		{[]string{"a", "b"}, ""},
		{[]string{"é1", "éa"}, "é"},
		{[]string{"\u00e9", "\u00ea"}, ""},
	}
	for _, tt := range tests {
		if got := commonPrefix(tt.words); got != tt.want {
			t.Errorf("commonPrefix(%q) = %q, want %q", tt.words, got, tt.want)
		}
	}
}

func TestAncestorsAndSelf(t *testing.T) {
	if got, want := ancestorsAndSelf("/a/b/c"), []string{"/", "/a", "/a/b", "/a/b/c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ancestorsAndSelf = %q, want %q", got, want)
	}
	if got, want := ancestorsAndSelf("/"), []string{"/"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ancestorsAndSelf(/) = %q, want %q", got, want)
	}
}
