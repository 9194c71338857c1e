package storage

import (
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// decodeEntry decodes a raftpb.Entry as Entry.Unmarshal does, except that
// e.Data aliases data instead of being a copy: at start the entries of the
// whole log are read, and copying each one's data again costs a tenth of a
// restart. The caller must not reuse data.
func decodeEntry(data []byte, e *raftpb.Entry) error {
	*e = raftpb.Entry{}
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return entryErr(0, n)
		}
		data = data[n:]
		want := protowire.VarintType
		switch num {
		case 1, 2, 3:
		case 4:
			want = protowire.BytesType
		default:
			// A field this version does not know is skipped, as Unmarshal
			// skips it.
			n := protowire.ConsumeFieldValue(num, typ, data)
			if n < 0 {
				return entryErr(num, n)
			}
			data = data[n:]
			continue
		}
		if typ != want {
			return fmt.Errorf("%w: entry field %d has wire type %d", ErrCorrupt, num, typ)
		}
		if num == 4 {
			v, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return entryErr(num, n)
			}
			data = data[n:]
			// Never nil once the field is present, as with Unmarshal.
			e.Data = v[:len(v):len(v)]
			continue
		}
		v, n := protowire.ConsumeVarint(data)
		if n < 0 {
			return entryErr(num, n)
		}
		data = data[n:]
		switch num {
		case 1:
			e.Type = raftpb.EntryType(int32(v))
		case 2:
			e.Term = v
		case 3:
			e.Index = v
		}
	}
	return nil
}

func entryErr(field protowire.Number, n int) error {
	return fmt.Errorf("%w: entry field %d: %w", ErrCorrupt, field, protowire.ParseError(n))
}
