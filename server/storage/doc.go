/*
Package storage owns the files that make a raft node durable: the write-ahead
log (WAL) of raft entries and HardState, the snapshot files, and the purging
of both.

# Using it

A server keeps a WAL directory and a snapshot directory. On first start it
creates the WAL; metadata is stored at the head of every segment and comes
back from ReadAll:

	w, err := storage.Create(logger, walDir, metadata)

On a restart it finds the newest snapshot that the WAL also knows about, opens
the WAL at that snapshot and reads everything after it:

	marks, err := storage.ValidSnapshotEntries(walDir)
	snap, err := snapshotter.LoadNewestAvailable(marks) // ErrNoSnapshot: start from WALSnapshot{}; snap.Open() reads its data
	w, err := storage.Open(logger, walDir, storage.WALSnapshot{Index: snap.Metadata.Index, Term: snap.Metadata.Term})
	metadata, hardState, entries, err := w.ReadAll()

ReadAll must be called before anything is appended. Then, for every append
raft hands over (a MsgStorageAppend, or several gathered), in this order
(the order survives a crash at any point):

 1. if it carries a snapshot: snapshotter.Save(snap), then
    w.SaveSnapshot(mark). The snapshot file comes first so that a WAL
    snapshot record never points at a file that does not exist; an orphaned
    snapshot file is harmless, LoadNewestAvailable ignores it.
 2. w.Save(hardState, entries): everything raft handed over at once,
    made durable with one fsync (group commit). Only after Save returns may
    messages be sent or entries acknowledged.
 3. send the responses that promise the write.

A snapshot of the local state machine is written by Snapshotter.Write, which
may run on its own goroutine beside the appends; once it returns, the owner of
the WAL records it with w.SaveSnapshot(mark), and the old files go:

	oldest, err := snapshotter.Purge(retain) // autopurge.snapRetainCount
	err = w.PurgeTo(oldest)

PurgeTo keeps every segment needed to replay from the oldest retained
snapshot, so a corrupt newest snapshot can still be skipped on restart.

A WAL is safe for use by several goroutines, but appends are meant to come
from one goroutine: the replication node's append goroutine. After a failed
write or fsync the WAL refuses further appends and returns the first error
again: after a failed fsync the kernel may have dropped the unwritten pages,
so the only safe course is to stop and recover from the files on restart
(see "Crashes and corruption").

# Identity

A data directory records who wrote it (Identity): the server id, whether
it is a standalone server or a member of an ensemble, and a random token
made when the directory was created. The WAL keeps it as its metadata, at
the head of every segment; the snapshot directory keeps it, with the WAL's
last known location, in a file named identity (JSON, written aside,
synced and renamed into place). OpenDisk creates both on first use, the
log first, and then refuses, with an error matching ErrIdentity that says
what it found and what to do:

  - a missing WAL beside snapshots or an identity file: the log was moved
    (dataLogDir changed without moving it) or lost, and starting empty
    would serve an empty tree;
  - a WAL and an identity file with different tokens: the halves of two
    data directories;
  - a used WAL without an identity file: the snapshot directory is not
    the one written with this log;
  - another server id or the other mode than the configuration's.

A WAL without metadata and no identity file was written before identities
were recorded: it is accepted once, and its identity file then holds it to
the configuration's id and mode. An unused WAL without an identity file is
what a crash during the first start leaves: the file is written then.

# WAL directory

The WAL is a sequence of segment files named

	%016x-%016x.wal   (sequence number, raft index)

The first segment is 0000000000000000-0000000000000000.wal. The sequence
number grows by one per segment, without gaps. The raft index is the index of
the first entry the segment was opened for (the last index written so far, or
of a later snapshot record, plus one), so the segment holding a snapshot's
index is the last one whose index is not above it. A segment is cut once it
holds at least the segment size (64 MiB unless OpenDisk is given another,
rounded up to whole 4 KiB pages), after the Save that crossed the limit.
The new segment is written under a .tmp name, fsynced, renamed into place
and the directory fsynced, so a segment either exists whole or not at all;
stale .tmp files are removed by Open. A cut truncates the old segment to its records first. The directory is
locked (flock) while a WAL is open, so a second writer, in this process or
another, fails with ErrLocked.

Segments are full-size files from the start, so appends never grow them.
The next segment is prepared ahead, as spare.wal.tmp, written with zeros
(around the page cache, O_DIRECT, where the file system allows it) and
fsynced on a goroutine of its own: an append over written blocks changes no
file system metadata, so its fdatasync flushes the data alone, where an
append into blocks that were only allocated (fallocate) makes every
fdatasync commit the file system's journal. A segment that did not come
from a spare (the first one, the one appended to after Open, or one cut
while the spare was not ready) is only allocated, and is cut as soon as a
spare is ready. Open removes a spare a crash left behind; Close removes the
spare.

Create builds the first segment in a sibling directory named <dir>.tmp and
renames it into place, so a WAL directory either has a valid first segment or
does not exist.

# Records

A segment is a stream of records, each 8-byte aligned:

	offset 0   length   uint64, little endian: n, the body length in bytes (n >= 5).
	                    The top 8 bits are zero. A length of 0 ends the segment
	                    (preallocated space).
	offset 8   checksum uint32, little endian (see below)
	offset 12  type     uint8
	offset 13  data     n-5 bytes
	           padding  zero bytes up to the next multiple of 8

The alignment keeps the length word inside one disk sector, so a crash never
leaves half a length. Record types and their data:

	1 metadata  the bytes given to Create; repeated at the head of every segment
	2 entry     a raftpb.Entry in protobuf encoding
	3 state     a raftpb.HardState in protobuf encoding
	4 crc       uint32, little endian: the checksum of the record before this one;
	            at the head of every segment and of every append
	5 snapshot  index uint64, term uint64, little endian: a snapshot was saved

Every segment starts with a crc record, then a metadata record; the first
segment then has a snapshot record for index 0, term 0 (so a WAL can be opened
before any snapshot exists), later segments the last HardState written before
the cut (so reading from a later segment does not lose it).

# Checksums

The checksum is CRC-32C (Castagnoli) over the type byte and the data,
seeded with the checksum of the previous record, so the chain covers every
record of every segment in order:

	sum(r) = crc32c(seed, type || data)
	seed   = sum(previous record), or for a crc record the value it carries

A reader that starts in the middle of the log (after old segments were
purged) takes its seed from the crc record at the head of the first segment it
reads; when it already has a chain, a crc record that disagrees with it is a
checksum mismatch. A segment that lost its last records therefore cannot go
unnoticed: the next segment's crc record no longer matches.

# Crashes and corruption

Records reach a segment in appends: the records that one fsync makes
durable (a Save that changes entries, term or vote, with any commit-only
HardState before it; a snapshot record; what Close flushes). Every append
begins with a crc record carrying the checksum so far. Its records are
written with pwrite in whole 4 KiB pages: the last page of an append is
written padded with zeros, and written again with the next append's
records; an append never writes part of a page, which the kernel would first
read from disk when the page is not cached. Beyond the last append the
segment holds zeros (spares are written with zeros, other segments are
allocated, a cut-off tail is truncated). So a crash during an append leaves,
in the last segment only, each 512-byte sector the append wrote either
written or as it was: the records of earlier appends, then zeros, in any
combination (the disk need not write sectors in order); or, where appends
grow the file instead, the file ends at a page boundary inside the append.

ReadAll reads the last segment to the first offset X at which no intact
record begins, and treats what follows as such an interrupted append (never
acknowledged, since Save had not returned) only when all of these hold:

  - at X is a zero length word, a record whose checksum fails and that
    holds a 512-byte-aligned sector of zeros, or a record (or length word)
    that the end of the file cuts short, the file's size then being a
    multiple of 4 KiB;
  - X is past the segment's header (its crc and metadata records), which
    is durable before the segment gets its name;
  - no intact crc record begins anywhere after X, up to the end of the
    file: it would begin an append made after an fsync that covered X.

It then truncates the segment at X before anything is appended and, when
what it cuts off is not all zeros, logs a warning naming the file, X, and
how many bytes and records (as far as their length words can be followed) it
cut off. Anything else is corruption: ReadAll fails with a *CorruptError
naming the file and the offset of the first damaged record, which matches
ErrCorrupt (and ErrCRCMismatch for checksum failures), and changes nothing.
That includes a checksum failure without a zero sector, a length word no
writer produces (top bits set, below 5, above 128 MiB), a crc record that
does not continue the chain, a gap in the entry indexes, a record cut short
or a zero length word before the end of a segment other than the last, and a
missing segment. ValidSnapshotEntries, which may read a log being appended
to, only stops at the end of the last segment's records; ReadAll's verdict
is the one that counts.

What the rule cannot tell from a crash, no reader of these files can: damage
confined to the last append, or damage that also wipes out every crc record
after it (a zeroed range or a truncation reaching past the end of the
records), leaves exactly what a crash can, and costs the records from the
damage on. The rule also refuses some images that a crash can leave, where
the bytes of the interrupted append happen to form an intact crc record
after X (entry data chosen to look like one): the server then stops, and
nothing is lost.

A standalone server whose log is corrupt cannot start: restore it from a
backup, or accept the loss of every write logged from the damage on and cut
the log there, truncating the damaged segment at the offset and removing the
segments after it. A member of an ensemble must not be restarted with a cut
log or an empty one: it may have acknowledged writes that the ensemble
counted as committed, and raft's guarantees assume it kept them. It must be
rebuilt from its peers.

A length or data bound read from disk is checked against the size of the
file and a 128 MiB record limit before anything is allocated.

After a failed write or fsync, the WAL refuses every further append with the
first error, and truncates the tail segment back to the end of what the last
successful fsync made durable: the kernel may report a failed writeback
once, mark the pages clean, and go on serving them from its cache, so that a
restarted process would otherwise read records that never reached the disk
and take them for durable ones. ReadAll fsyncs the tail segment before it
returns, so that what it read and what is appended after it is durable
whichever process wrote it.

# Snapshot files

Snapshots live in their own directory, one file per snapshot, named

	%016x-%016x.snap   (term, index)

so that name order is age order. A file is

	offset 0   magic     "CSNP"
	offset 4   version   uint32, little endian: 2
	offset 8   m         uint32, little endian: the metadata length
	offset 12  metadata  a raftpb.SnapshotMetadata in protobuf encoding
	           data      the state machine's encoding, d bytes
	trailer    d         uint64, little endian
	           checksum  uint32, little endian: CRC-32C of metadata then data
	           end       "CSNE"

The data is streamed into the file as the state machine encodes it and read
back the same way (Snapshotter.Write, Snapshot.Open): a snapshot of a large
tree is never held in memory whole. The trailer comes last so that a file cut
short anywhere fails its checks. It is written to <name>.tmp, fsynced,
renamed into place and the directory fsynced. Loading reads a file through
once to check it before anyone restores from it; a file that fails its checks
is renamed to <name>.broken and the next older one is tried; the newest
broken file is kept for inspection. A file of another format version is not
damage: loading stops with an error that names it.

# A full disk

Segments are allocated whole before they are used, so appends into a
segment ask the file system for no space. What does ask for it: the next
segment (a spare written ahead, or a file allocated at the cut when no
spare is ready), a Save whose records run past the end of its segment, and
snapshot files. A lack of space there (ENOSPC, or EDQUOT for a quota) is
met before anything in place changes, and is not a failure of the log:

  - A cut that finds no space for the next segment (while making its file
    under a .tmp name, which is then removed) does not fail the Save that
    filled the segment: the cut truncated and fsynced the full segment
    first, so that Save's records are durable. The full segment stays the
    tail, and the next Save or SaveSnapshot makes the next segment first,
    failing with an error matching ErrNoSpace, before it writes anything,
    while there is still no space.
  - A Save whose records would run past the end of its segment allocates
    their blocks (fallocate) before it writes any, and fails with
    ErrNoSpace without space.
  - A snapshot that finds no space fails with ErrNoSpace, its .tmp file
    removed: nothing refers to a snapshot before WAL.SaveSnapshot.

A call that failed with ErrNoSpace changed nothing and may be made again
with the same arguments; the replication node retries its append until it
succeeds, and refuses new writes meanwhile (see package replication). The
log grows, in the meantime, only as far as its preallocated space allows.
Every other failure stays fatal, whatever its error: a lack of space met
while writing into a segment in place (possible only on file systems
without fallocate, where appends grow the file), and any failed fsync,
since the kernel may have dropped the pages it could not write (the lesson
PostgreSQL and etcd drew in 2018): the WAL refuses further appends, the
server stops, and a restart recovers from what is durable.

A spare is prepared only while the file system has room for it and as much
again: written into the last free space, it would take that space from the
cut it is prepared for, and from snapshots.
*/
package storage
