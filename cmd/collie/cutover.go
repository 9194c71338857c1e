package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collie-io/collie/client"
	"github.com/collie-io/collie/internal/fourletter"
	"github.com/collie-io/collie/proto"
	"github.com/collie-io/collie/server/follow"
)

const cutoverUsage = `usage: collie cutover -servers host:port,... [-zookeeper host:port,...] [-force] [-timeout d]

Turns the Collie servers that follow a ZooKeeper ensemble (collie server
-follow-zookeeper) into a Collie ensemble of their own, starting from the
same zxid on every one of them, with the ensemble's sessions.

It writes a marker node (` + follow.MarkerPath + `) through the ZooKeeper
ensemble. Each follower stops following where the ensemble committed the
marker, writes its data directory from its copy as it stands there, and
goes on, in the same process and on the same client port, as a member of
the new ensemble; clients reconnect with their sessions. Every write a
Collie server acknowledged comes before the marker. Writes ZooKeeper takes
after it are not in Collie: move every client to the Collie servers first,
and stop the ZooKeeper servers once this command has finished.

-servers lists the client addresses of every follower that is to become a
member; their server ids come from the sessions they hand out. With
-zookeeper, the ZooKeeper servers are asked (srvr) whether any client is
still connected to them, and the cut-over is refused if one is, unless
-force.

`

func runCutover(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collie cutover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, cutoverUsage)
		fs.PrintDefaults()
	}
	servers := fs.String("servers", "", "client `addresses` of the Collie followers, comma-separated")
	zookeeper := fs.String("zookeeper", "", "client `addresses` of the ZooKeeper servers, comma-separated, to check that no client uses them")
	force := fs.Bool("force", false, "cut over even though ZooKeeper servers still have clients, whose later writes are lost")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up waiting for the followers after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || *servers == "" {
		fs.Usage()
		return 2
	}
	req := cutoverRequest{servers: splitAddrs(*servers), zookeeper: splitAddrs(*zookeeper), force: *force, timeout: *timeout}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := cutover(ctx, req, stdout); err != nil {
		fmt.Fprintf(stderr, "collie cutover: %v\n", err)
		return 1
	}
	return 0
}

type cutoverRequest struct {
	servers, zookeeper []string
	force              bool
	timeout            time.Duration
}

func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func cutover(ctx context.Context, req cutoverRequest, out io.Writer) error {
	for _, addr := range req.servers {
		if err := checkFollower(ctx, addr); err != nil {
			return err
		}
	}
	if err := checkZooKeeperIdle(ctx, req.zookeeper, req.force, out); err != nil {
		return err
	}
	members, err := memberIDs(ctx, req.servers)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "members    %s: server ids %s\n", strings.Join(req.servers, ", "), idString(members))

	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return err
	}
	plan := follow.Plan{Members: members, Token: hex.EncodeToString(token)}
	start := time.Now()
	zxid, err := writeMarker(ctx, req.servers[0], plan)
	if err != nil {
		return err
	}
	if zxid != 0 {
		fmt.Fprintf(out, "marker     %s at zxid 0x%x: the Collie ensemble starts there\n", follow.MarkerPath, zxid)
	} else {
		fmt.Fprintf(out, "marker     %s sent; its answer was lost as its server cut over\n", follow.MarkerPath)
	}
	if err := awaitMembers(ctx, req.servers, members, start, out); err != nil {
		return err
	}
	first, zxid, err := removeMarker(ctx, req.servers, zxid)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ensemble   serving; its first write, the marker's removal, was acknowledged %s after the marker was written\n", first.Sub(start).Round(time.Millisecond))
	fmt.Fprintf(out, "zxid       0x%x: everything ZooKeeper committed up to it is in Collie, and nothing after it\n", zxid)
	fmt.Fprintln(out, "next       stop the ZooKeeper servers now. Clients reconnect to the Collie servers with their sessions.")
	fmt.Fprintln(out, "           Each Collie server stays a member when it restarts; -follow-zookeeper and the ZooKeeper")
	fmt.Fprintln(out, "           servers' lines in its zoo.cfg may go at any restart, its own and the other members' stay.")
	return nil
}

// checkFollower makes sure addr is a Collie server following a ZooKeeper
// ensemble, in sync with its leader.
func checkFollower(ctx context.Context, addr string) error {
	srvr, err := fourletter.Ask(ctx, addr, "srvr")
	if err != nil {
		return err
	}
	if mode, _ := srvrLine(srvr, "Mode"); !strings.Contains(firstLine(srvr), "collie") || mode != "observer" {
		return fmt.Errorf("%s is not a Collie server following a ZooKeeper ensemble in sync with its leader (srvr: %q)", addr, firstLine(srvr))
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// checkZooKeeperIdle refuses the cut-over while a ZooKeeper server has
// clients: what they write after the marker would not be in Collie.
func checkZooKeeperIdle(ctx context.Context, addrs []string, force bool, out io.Writer) error {
	if len(addrs) == 0 {
		fmt.Fprintln(out, "zookeeper  not asked (-zookeeper): every client must use the Collie servers, or its later writes are lost")
		return nil
	}
	var busy []string
	for _, addr := range addrs {
		srvr, err := fourletter.Ask(ctx, addr, "srvr")
		if err != nil {
			return fmt.Errorf("%w (leave it out of -zookeeper if it is stopped)", err)
		}
		v, _ := srvrLine(srvr, "Connections")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%s answers srvr without a connection count: %q", addr, firstLine(srvr))
		}
		// The count includes the connection that asks.
		if n > 1 {
			busy = append(busy, fmt.Sprintf("%s has %d", addr, n-1))
		}
	}
	if len(busy) == 0 {
		fmt.Fprintf(out, "zookeeper  %s: no client connected\n", strings.Join(addrs, ", "))
		return nil
	}
	msg := fmt.Sprintf("ZooKeeper servers still have clients (%s): what they write after the cut-over is not in Collie", strings.Join(busy, ", "))
	if !force {
		return errors.New(msg + "; move them to the Collie servers and try again, or use -force")
	}
	fmt.Fprintf(out, "zookeeper  %s (-force)\n", msg)
	return nil
}

// srvrLine reads the line "name: value" of srvr's answer.
func srvrLine(srvr, name string) (string, bool) {
	for line := range strings.SplitSeq(srvr, "\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// memberIDs learns each follower's server id from a session it opens:
// ZooKeeper's servers, and Collie's, put their id in the top byte of the
// session ids they hand out.
func memberIDs(ctx context.Context, servers []string) ([]uint64, error) {
	var ids []uint64
	for _, addr := range servers {
		c, err := client.Dial(ctx, addr, client.Config{SessionTimeout: 10 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("a session on %s: %w", addr, err)
		}
		id := uint64(c.SessionID()) >> 56
		c.Close()
		if slices.Contains(ids, id) {
			return nil, fmt.Errorf("%s hands out sessions of server %d, as another of -servers does: list each follower once", addr, id)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// writeMarker creates the marker through the follower at addr, with an
// ACL that lets nobody but ZooKeeper's super user read its token. It
// returns the marker's zxid, or 0 when the answer was lost because the
// follower cut over before it could send it.
func writeMarker(ctx context.Context, addr string, plan follow.Plan) (int64, error) {
	c, err := client.Dial(ctx, addr, client.Config{SessionTimeout: 10 * time.Second})
	if err != nil {
		return 0, fmt.Errorf("a session on %s: %w", addr, err)
	}
	defer c.Close()
	_, stat, err := c.Create(ctx, follow.MarkerPath, plan.Marshal(), proto.ModePersistent, client.WorldACL(0))
	switch {
	case errors.Is(err, client.ErrNodeExists):
		return 0, fmt.Errorf("%s exists already: a cut-over is under way, or one failed; see the followers' logs, and delete it through ZooKeeper before trying again", follow.MarkerPath)
	case errors.Is(err, client.ErrConnectionLoss):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("writing %s through %s: %w", follow.MarkerPath, addr, err)
	}
	return stat.Czxid, nil
}

// awaitMembers waits until every follower serves as a member of the
// Collie ensemble.
func awaitMembers(ctx context.Context, servers []string, members []uint64, start time.Time, out io.Writer) error {
	left := slices.Clone(servers)
	for len(left) > 0 {
		var still []string
		for _, addr := range left {
			srvr, err := fourletter.Ask(ctx, addr, "srvr")
			if mode, _ := srvrLine(srvr, "Mode"); err == nil && (mode == "leader" || mode == "follower") {
				fmt.Fprintf(out, "cut over   %s: a %s of the Collie ensemble after %s\n", addr, mode, time.Since(start).Round(time.Millisecond))
				continue
			}
			still = append(still, addr)
		}
		left = still
		if len(left) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not become members of the Collie ensemble %s in time: see their logs; a follower that meets the marker stops following ZooKeeper, so keep the ZooKeeper servers running until they do", strings.Join(left, ", "), idString(members))
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// removeMarker deletes the marker through the new ensemble, its first
// write, and returns when it was acknowledged and the marker's zxid.
func removeMarker(ctx context.Context, servers []string, zxid int64) (time.Time, int64, error) {
	c, err := client.Dial(ctx, strings.Join(servers, ","), client.Config{SessionTimeout: 10 * time.Second})
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("a session of the Collie ensemble: %w", err)
	}
	defer c.Close()
	// A delete whose answer was lost may have been done: the marker's
	// absence after it is its answer.
	deleteSent := false
	for {
		ok, stat, err := c.Exists(ctx, follow.MarkerPath)
		switch {
		case err == nil && !ok && deleteSent:
			return time.Now(), zxid, nil
		case err == nil && !ok:
			return time.Time{}, 0, fmt.Errorf("%s is not in the Collie ensemble's tree", follow.MarkerPath)
		case err == nil && zxid != 0 && stat.Czxid != zxid:
			return time.Time{}, 0, fmt.Errorf("%s in the Collie ensemble was created at zxid 0x%x, not 0x%x", follow.MarkerPath, stat.Czxid, zxid)
		case err == nil:
			zxid = stat.Czxid
			deleteSent = true
			if err = c.Delete(ctx, follow.MarkerPath, stat.Version); err == nil {
				return time.Now(), zxid, nil
			}
		}
		if !errors.Is(err, client.ErrConnectionLoss) && !errors.Is(err, client.ErrSessionMoved) {
			return time.Time{}, 0, fmt.Errorf("removing %s: %w", follow.MarkerPath, err)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, 0, fmt.Errorf("removing %s: %w", follow.MarkerPath, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func idString(ids []uint64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(s, ",")
}
