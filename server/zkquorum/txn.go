package zkquorum

import (
	"encoding/binary"
	"fmt"

	"github.com/collie-io/collie/proto"
)

// TxnHeader is ZooKeeper's TxnHeader (zookeeper.jute), the first record of
// every transaction the leader sends.
type TxnHeader struct {
	ClientID int64 // the session that sent the request
	Cxid     int32 // the request's xid in that session
	Zxid     int64
	Time     int64 // the leader's clock when it prepared the txn, ms since the epoch
	Type     proto.OpCode
}

// txnHeaderSize is TxnHeader's encoded size: three longs, two ints.
const txnHeaderSize = 8 + 4 + 8 + 8 + 4

// A Txn is one committed transaction as the leader sent it.
type Txn struct {
	Header TxnHeader
	// Data is the transaction exactly as in the packet: the TxnHeader, the
	// txn record its Type names (CreateTxn, SetDataTxn, ..., ErrorTxn for a
	// request that failed, MultiTxn), then the TxnDigest when the leader has
	// digests enabled (ZooKeeper 3.8's default).
	Data []byte
}

// parseTxn reads the header at the start of data, the payload of a PROPOSAL
// or INFORM, and checks that it names the zxid the packet carries.
func parseTxn(zxid int64, data []byte) (Txn, error) {
	if len(data) < txnHeaderSize {
		return Txn{}, fmt.Errorf("%w: txn of %d bytes is shorter than its header", ErrMalformed, len(data))
	}
	h := TxnHeader{
		ClientID: int64(binary.BigEndian.Uint64(data[0:])),
		Cxid:     int32(binary.BigEndian.Uint32(data[8:])),
		Zxid:     int64(binary.BigEndian.Uint64(data[12:])),
		Time:     int64(binary.BigEndian.Uint64(data[20:])),
		Type:     proto.OpCode(int32(binary.BigEndian.Uint32(data[28:]))),
	}
	if h.Zxid != zxid {
		return Txn{}, fmt.Errorf("%w: txn header zxid %#x in a packet for zxid %#x", ErrMalformed, h.Zxid, zxid)
	}
	return Txn{Header: h, Data: data}, nil
}
