package shell

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/quota"
)

// The quota commands do what zkCli.sh's setquota, listquota and delquota
// do (ZooKeeper 3.8's SetQuotaCommand, ListQuotaCommand, DelQuotaCommand),
// request for request: ordinary reads, creates, setData and deletes under
// /zookeeper/quota, which the server turns into a quota.

// quotaFlags are the options of setquota and delquota, which Java's option
// parser takes as a group: one of them at most.
const quotaFlags = "nbNB"

// quotaOption returns the one quota option given. Like Java's option
// parser, it refuses a second one, and, when required, none; then, like
// zkCli.sh, a command line without a path.
func quotaOption(o options, required bool, usage string) (byte, error) {
	var first byte
	for _, f := range o.order {
		if !strings.ContainsRune(quotaFlags, rune(f)) {
			continue
		}
		if first != 0 {
			return 0, usageError(fmt.Sprintf("The option '%c' was specified but an option from this group has already been selected: '%c'", f, first))
		}
		first = f
	}
	if first == 0 && required {
		return 0, usageError("Missing required option: [-n num soft quota, -b bytes soft quota, -N num hard quota, -B bytes hard quota]")
	}
	if len(o.args) < 2 {
		return 0, usageError(usage)
	}
	return first, nil
}

// quotaLimits returns the limits setquota's option asks for, or the
// message zkCli.sh prints for its value, which is no failure to it.
func quotaLimits(flag byte, value string) (quota.Stats, string) {
	var q quota.Stats
	q.SetCount(-1)
	q.SetBytes(-1)
	q.SetCountHardLimit(-1)
	q.SetByteHardLimit(-1)
	n, ok := proto.JavaParseLong(value)
	if flag == 'n' || flag == 'N' {
		// Integer.parseInt.
		ok = ok && n == int64(int32(n))
	}
	if !ok {
		return q, "NumberFormatException happens when parsing the option value"
	}
	switch flag {
	case 'n', 'N':
		if n <= 0 {
			return q, "the num quota must be greater than zero"
		}
		if flag == 'n' {
			q.SetCount(n)
		} else {
			q.SetCountHardLimit(n)
		}
	default:
		if n < 0 {
			return q, "the bytes quota must be greater than or equal to zero"
		}
		if flag == 'b' {
			q.SetBytes(n)
		} else {
			q.SetByteHardLimit(n)
		}
	}
	return q, ""
}

type jsonQuota struct {
	Path   string      `json:"path"`
	Limits *jsonLimits `json:"limits,omitempty"`
	Usage  *jsonUsage  `json:"usage,omitempty"`
}

type jsonLimits struct {
	Count          int64 `json:"count"`
	Bytes          int64 `json:"bytes"`
	CountHardLimit int64 `json:"countHardLimit"`
	ByteHardLimit  int64 `json:"byteHardLimit"`
}

type jsonUsage struct {
	Count int64 `json:"count"`
	Bytes int64 `json:"bytes"`
}

func toJSONLimits(s quota.Stats) *jsonLimits {
	return &jsonLimits{Count: s.Count(), Bytes: s.Bytes(), CountHardLimit: s.CountHardLimit(), ByteHardLimit: s.ByteHardLimit()}
}

func runSetQuota(ctx context.Context, sh *Shell, o options, res *result) error {
	flag, err := quotaOption(o, true, commandsByName["setquota"].usage())
	if err != nil {
		return err
	}
	path := o.args[1]
	if strings.HasPrefix(path, quota.Root) {
		res.warn("cannot set a quota under the path: " + quota.Root)
		return nil
	}
	want, problem := quotaLimits(flag, o.flags[flag])
	if problem != "" {
		res.warn(problem)
		return nil
	}
	if err := checkPath(path, false); err != nil {
		return err
	}
	exists, _, err := sh.client.Exists(ctx, path)
	if err != nil {
		return failure(err, path)
	}
	if !exists {
		return usageError(path + " does not exist.")
	}
	if err := checkChildQuota(ctx, sh, path); err != nil {
		return err
	}
	if err := checkParentQuota(ctx, sh, path); err != nil {
		return err
	}
	// The quota's parents, as the Java client makes them; /zookeeper/quota
	// itself always exists.
	dir := quota.Root
	for _, name := range javaSplitPath(path)[1:] {
		dir += "/" + name
		if err := createIfMissing(ctx, sh, dir); err != nil {
			return err
		}
	}
	limitPath, statPath := dir+"/"+quota.LimitNode, dir+"/"+quota.StatNode
	exists, _, err = sh.client.Exists(ctx, limitPath)
	if err != nil {
		return failure(err, limitPath)
	}
	limits := want
	if !exists {
		if _, _, err := sh.client.Create(ctx, limitPath, []byte(want.String()), client.ModePersistent, nil); err != nil {
			return failure(err, limitPath)
		}
		if _, _, err := sh.client.Create(ctx, statPath, quota.Usage(0, 0), client.ModePersistent, nil); err != nil {
			return failure(err, statPath)
		}
		if limits, err = readQuota(ctx, sh, limitPath); err != nil {
			return err
		}
	} else {
		if limits, err = readQuota(ctx, sh, limitPath); err != nil {
			return err
		}
		if want.Count() > -1 {
			limits.SetCount(want.Count())
		}
		if want.Bytes() > -1 {
			limits.SetBytes(want.Bytes())
		}
		if want.CountHardLimit() > -1 {
			limits.SetCountHardLimit(want.CountHardLimit())
		}
		if want.ByteHardLimit() > -1 {
			limits.SetByteHardLimit(want.ByteHardLimit())
		}
	}
	usage, err := readQuota(ctx, sh, statPath)
	if err != nil {
		return err
	}
	if c := usage.Count(); limits.Count() > -1 && limits.Count() < c || limits.CountHardLimit() > -1 && limits.CountHardLimit() < c {
		res.print(fmt.Sprintf("[Warning]: the count quota you create is less than the existing count:%d", c))
	}
	if b := usage.Bytes(); limits.Bytes() > -1 && limits.Bytes() < b || limits.ByteHardLimit() > -1 && limits.ByteHardLimit() < b {
		res.print(fmt.Sprintf("[Warning]: the bytes quota you create is less than the existing bytes:%d", b))
	}
	if exists {
		if _, err := sh.client.Set(ctx, limitPath, []byte(limits.String()), client.AnyVersion); err != nil {
			return failure(err, limitPath)
		}
	}
	res.value = jsonQuota{Path: path, Limits: toJSONLimits(limits)}
	return nil
}

// javaSplitPath splits a path at '/' as Java's String.split does: a leading
// empty name, none at the end.
func javaSplitPath(path string) []string {
	names := strings.Split(path, "/")
	for len(names) > 0 && names[len(names)-1] == "" {
		names = names[:len(names)-1]
	}
	if len(names) == 0 {
		return []string{""}
	}
	return names
}

func createIfMissing(ctx context.Context, sh *Shell, path string) error {
	exists, _, err := sh.client.Exists(ctx, path)
	if err != nil {
		return failure(err, path)
	}
	if exists {
		return nil
	}
	_, _, err = sh.client.Create(ctx, path, nil, client.ModePersistent, nil)
	if err != nil && !errors.Is(err, client.ErrNodeExists) {
		return failure(err, path)
	}
	return nil
}

// readQuota reads a limits or stats node. Data that ZooKeeper's client
// cannot read stops zkCli.sh with an exception; here it fails the command.
func readQuota(ctx context.Context, sh *Shell, path string) (quota.Stats, error) {
	data, _, err := sh.client.Get(ctx, path)
	if err != nil {
		return quota.Stats{}, failure(err, path)
	}
	s, err := quota.Parse(data)
	if err != nil {
		return quota.Stats{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// checkChildQuota refuses a quota on path when a path below it has one,
// visiting the quota nodes below /zookeeper/quota+path in the order
// ZooKeeper's ZKUtil.visitSubTreeDFS does, and stopping at the first.
func checkChildQuota(ctx context.Context, sh *Shell, path string) error {
	root := quota.Path(path)
	if err := checkPath(root, false); err != nil {
		return err
	}
	if _, _, err := sh.client.Get(ctx, root); err != nil {
		if errors.Is(err, client.ErrNoNode) {
			return nil
		}
		return failure(err, root)
	}
	var found error
	check := func(p string) {
		if found != nil {
			return
		}
		children, _, err := sh.client.Children(ctx, p)
		switch {
		case errors.Is(err, client.ErrNoNode):
		case err != nil:
			found = failure(err, p)
		case p != root && slices.Contains(children, quota.LimitNode):
			found = usageError(path + " has a child " + strings.TrimPrefix(p, quota.Root) + " which has a quota")
		}
	}
	check(root)
	err := visitSubtree(root, func(p string) ([]string, error) {
		if found != nil {
			return nil, nil
		}
		children, _, err := sh.client.Children(ctx, p)
		return children, err
	}, check)
	if found != nil {
		return found
	}
	return err
}

// checkParentQuota refuses a quota on path when a path above it has one.
func checkParentQuota(ctx context.Context, sh *Shell, path string) error {
	names := javaSplitPath(path)
	dir := quota.Root
	for _, name := range names[1:max(len(names)-1, 1)] {
		dir += "/" + name
		children, _, err := sh.client.Children(ctx, dir)
		if errors.Is(err, client.ErrNoNode) {
			return nil
		}
		if err != nil {
			return failure(err, dir)
		}
		if len(children) == 0 {
			return nil
		}
		if dir != quota.Path(path) && slices.Contains(children, quota.LimitNode) {
			return usageError(path + " has a parent " + strings.TrimPrefix(dir, quota.Root) + " which has a quota")
		}
	}
	return nil
}

func runListQuota(ctx context.Context, sh *Shell, o options, res *result) error {
	path := o.args[1]
	limitPath, statPath := quota.LimitPath(path), quota.StatPath(path)
	res.note("absolute path is " + limitPath)
	if err := checkPath(limitPath, false); err != nil {
		return err
	}
	limits, err := readQuota(ctx, sh, limitPath)
	if err == nil {
		var usage quota.Stats
		if usage, err = readQuota(ctx, sh, statPath); err == nil {
			res.print("Output quota for "+path+" "+limits.String(), "Output stat for "+path+" "+usage.String())
			res.value = jsonQuota{Path: path, Limits: toJSONLimits(limits), Usage: &jsonUsage{Count: usage.Count(), Bytes: usage.Bytes()}}
			return nil
		}
	}
	if errors.Is(err, client.ErrNoNode) {
		res.warn("quota for " + path + " does not exist.")
		res.value = jsonQuota{Path: path}
		return nil
	}
	return err
}

func runDelQuota(ctx context.Context, sh *Shell, o options, res *result) error {
	flag, err := quotaOption(o, false, commandsByName["delquota"].usage())
	if err != nil {
		return err
	}
	path := o.args[1]
	dir, limitPath := quota.Path(path), quota.LimitPath(path)
	if err := checkPath(limitPath, false); err != nil {
		return err
	}
	err = delQuota(ctx, sh, flag, dir, limitPath, path, res)
	if errors.Is(err, client.ErrNoNode) {
		res.warn("quota for " + path + " does not exist.")
		return nil
	}
	return err
}

func delQuota(ctx context.Context, sh *Shell, flag byte, dir, limitPath, path string, res *result) error {
	exists, _, err := sh.client.Exists(ctx, limitPath)
	if err != nil {
		return failure(err, limitPath)
	}
	if !exists {
		res.print("Quota does not exist for " + path)
		res.value = jsonQuota{Path: path}
		return nil
	}
	limits, err := readQuota(ctx, sh, limitPath)
	if err != nil {
		return err
	}
	if flag == 0 {
		children, _, err := sh.client.Children(ctx, dir)
		if err != nil {
			return failure(err, dir)
		}
		for _, c := range children {
			if err := sh.client.Delete(ctx, dir+"/"+c, client.AnyVersion); err != nil {
				return failure(err, dir+"/"+c)
			}
		}
		// The parents the quota alone needed go too.
		for p := dir; p != quota.Root; p = proto.Parent(p) {
			children, _, err := sh.client.Children(ctx, p)
			if err != nil {
				return failure(err, p)
			}
			if len(children) > 0 {
				break
			}
			if err := sh.client.Delete(ctx, p, client.AnyVersion); err != nil {
				return failure(err, p)
			}
		}
		res.value = jsonQuota{Path: path}
		return nil
	}
	switch flag {
	case 'n':
		limits.SetCount(-1)
	case 'b':
		limits.SetBytes(-1)
	case 'N':
		limits.SetCountHardLimit(-1)
	case 'B':
		limits.SetByteHardLimit(-1)
	}
	if _, err := sh.client.Set(ctx, limitPath, []byte(limits.String()), client.AnyVersion); err != nil {
		return failure(err, limitPath)
	}
	res.value = jsonQuota{Path: path, Limits: toJSONLimits(limits)}
	return nil
}
