// Package shell is `collie cli`: an interactive shell for ZooKeeper-protocol
// servers (Collie, or Apache ZooKeeper 3.5 and later) with the commands,
// flags and output of ZooKeeper's zkCli.sh, so that people and scripts used
// to zkCli.sh can use it unchanged. It owns the command language (words,
// quoting and options as zkCli.sh parses them), the output formats (zkCli's
// text, or one JSON value per command), the printing of watch events, and
// line editing with history and completion on a terminal. Requests go
// through the client package.
//
// A Shell runs one command (Exec), as zkCli.sh does with a command after its
// options, or reads commands from a reader (Run): a terminal gets a prompt,
// line editing, history (the up arrow) and tab completion of commands and
// of paths (listing the parent on the server); anything else is read line
// by line without a prompt, as a script.
//
// The commands are zkCli.sh's, with its options: ls [-s] [-w] [-R], get
// [-s] [-w], set [-s] [-v version], create [-s] [-e] [-c] [-t ttl] path
// [data] [acl], delete [-v version], deleteall [-b batch], stat [-w], sync,
// getAcl [-s], setAcl [-s] [-v version] [-R], addauth, addWatch [-m mode],
// removewatches [-c|-d|-a] [-l], getEphemerals, getAllChildrenNumber,
// whoami, setquota -n|-b|-N|-B val, listquota, delquota [-n|-b|-N|-B],
// close, connect, quit, history, redo, printwatches; and two of
// its own: tree, which draws a subtree, and help. Words, quotes and
// options are parsed as zkCli.sh parses them.
//
// Output follows zkCli.sh: results on standard output, "Created /x" and
// error messages on standard error, watch events as
//
//	WATCHER::
//
//	WatchedEvent state:SyncConnected type:NodeDataChanged path:/x
//
// printed when they arrive, once per change the server reports however many
// of the shell's watches it fires. With Config.JSON every command prints
// one JSON value on standard output instead: its result, or
// {"error": message, "code": name} when it fails; watch events print as
// {"event": {...}}.
//
// # Goroutines
//
// The caller's goroutine reads and runs commands. While connected, one
// goroutine prints the session's state changes and one per watch waits for
// its events; all print through one lock, a whole event at a time. Close
// (and quit, close, connect) closes the client, which ends their channels,
// and waits for them.
package shell
