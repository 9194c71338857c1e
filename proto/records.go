// Code below mirrors zookeeper.jute field by field; keep the order.

package proto

type ID struct {
	Scheme string
	ID     string
}

func (r *ID) Encode(e *Encoder) {
	e.String(r.Scheme)
	e.String(r.ID)
}

func (r *ID) Decode(d *Decoder) {
	r.Scheme = d.String()
	r.ID = d.String()
}

type ACL struct {
	Perms int32
	ID    ID
}

func (r *ACL) Encode(e *Encoder) {
	e.Int(r.Perms)
	r.ID.Encode(e)
}

func (r *ACL) Decode(d *Decoder) {
	r.Perms = d.Int()
	r.ID.Decode(d)
}

type Stat struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64
	Mtime          int64
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
	Pzxid          int64
}

func (r *Stat) Encode(e *Encoder) {
	e.Long(r.Czxid)
	e.Long(r.Mzxid)
	e.Long(r.Ctime)
	e.Long(r.Mtime)
	e.Int(r.Version)
	e.Int(r.Cversion)
	e.Int(r.Aversion)
	e.Long(r.EphemeralOwner)
	e.Int(r.DataLength)
	e.Int(r.NumChildren)
	e.Long(r.Pzxid)
}

func (r *Stat) Decode(d *Decoder) {
	r.Czxid = d.Long()
	r.Mzxid = d.Long()
	r.Ctime = d.Long()
	r.Mtime = d.Long()
	r.Version = d.Int()
	r.Cversion = d.Int()
	r.Aversion = d.Int()
	r.EphemeralOwner = d.Long()
	r.DataLength = d.Int()
	r.NumChildren = d.Int()
	r.Pzxid = d.Long()
}

type ClientInfo struct {
	AuthScheme string
	User       string
}

func (r *ClientInfo) Encode(e *Encoder) {
	e.String(r.AuthScheme)
	e.String(r.User)
}

func (r *ClientInfo) Decode(d *Decoder) {
	r.AuthScheme = d.String()
	r.User = d.String()
}

type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
}

func (r *ConnectResponse) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	e.Bool(r.ReadOnly)
}

func (r *ConnectResponse) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	r.ReadOnly = d.Bool()
}

type SetWatches struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

func (r *SetWatches) Encode(e *Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
}

func (r *SetWatches) Decode(d *Decoder) {
	r.RelativeZxid = d.Long()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
}

type SetWatches2 struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

func (r *SetWatches2) Encode(e *Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
	e.Strings(r.PersistentWatches)
	e.Strings(r.PersistentRecursiveWatches)
}

func (r *SetWatches2) Decode(d *Decoder) {
	r.RelativeZxid = d.Long()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
	r.PersistentWatches = d.Strings()
	r.PersistentRecursiveWatches = d.Strings()
}

type RequestHeader struct {
	Xid  int32
	Type OpCode
}

func (r *RequestHeader) Encode(e *Encoder) {
	e.Int(r.Xid)
	e.Int(int32(r.Type))
}

func (r *RequestHeader) Decode(d *Decoder) {
	r.Xid = d.Int()
	r.Type = OpCode(d.Int())
}

type MultiHeader struct {
	Type OpCode
	Done bool
	Err  Code
}

func (r *MultiHeader) Encode(e *Encoder) {
	e.Int(int32(r.Type))
	e.Bool(r.Done)
	e.Int(int32(r.Err))
}

func (r *MultiHeader) Decode(d *Decoder) {
	r.Type = OpCode(d.Int())
	r.Done = d.Bool()
	r.Err = Code(d.Int())
}

type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

func (r *AuthPacket) Encode(e *Encoder) {
	e.Int(r.Type)
	e.String(r.Scheme)
	e.Buffer(r.Auth)
}

func (r *AuthPacket) Decode(d *Decoder) {
	r.Type = d.Int()
	r.Scheme = d.String()
	r.Auth = d.Buffer()
}

// GetSASLRequest carries a client's SASL token (opcode sasl). A client
// sends its first one, empty for DIGEST-MD5, right after the handshake.
type GetSASLRequest struct {
	Token []byte
}

func (r *GetSASLRequest) Encode(e *Encoder) { e.Buffer(r.Token) }
func (r *GetSASLRequest) Decode(d *Decoder) { r.Token = d.Buffer() }

// SetSASLResponse carries the server's SASL token back. ZooKeeper sends a
// nil token with an error, and the Java client, which reads the token
// whatever the error, fails its SASL exchange on it.
type SetSASLResponse struct {
	Token []byte
}

func (r *SetSASLResponse) Encode(e *Encoder) { e.Buffer(r.Token) }
func (r *SetSASLResponse) Decode(d *Decoder) { r.Token = d.Buffer() }

type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  Code
}

func (r *ReplyHeader) Encode(e *Encoder) {
	e.Int(r.Xid)
	e.Long(r.Zxid)
	e.Int(int32(r.Err))
}

func (r *ReplyHeader) Decode(d *Decoder) {
	r.Xid = d.Int()
	r.Zxid = d.Long()
	r.Err = Code(d.Int())
}

type GetDataRequest struct {
	Path  string
	Watch bool
}

func (r *GetDataRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Bool(r.Watch)
}

func (r *GetDataRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Watch = d.Bool()
}

type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

func (r *SetDataRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	e.Int(r.Version)
}

func (r *SetDataRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.Version = d.Int()
}

type ReconfigRequest struct {
	JoiningServers string
	LeavingServers string
	NewMembers     string
	CurConfigID    int64
}

func (r *ReconfigRequest) Encode(e *Encoder) {
	e.String(r.JoiningServers)
	e.String(r.LeavingServers)
	e.String(r.NewMembers)
	e.Long(r.CurConfigID)
}

func (r *ReconfigRequest) Decode(d *Decoder) {
	r.JoiningServers = d.String()
	r.LeavingServers = d.String()
	r.NewMembers = d.String()
	r.CurConfigID = d.Long()
}

type SetDataResponse struct {
	Stat Stat
}

func (r *SetDataResponse) Encode(e *Encoder) {
	r.Stat.Encode(e)
}

func (r *SetDataResponse) Decode(d *Decoder) {
	r.Stat.Decode(d)
}

type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags CreateMode
}

func (r *CreateRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	e.ACLs(r.ACL)
	e.Int(int32(r.Flags))
}

func (r *CreateRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = d.ACLs()
	r.Flags = CreateMode(d.Int())
}

type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags CreateMode
	TTL   int64
}

func (r *CreateTTLRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	e.ACLs(r.ACL)
	e.Int(int32(r.Flags))
	e.Long(r.TTL)
}

func (r *CreateTTLRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = d.ACLs()
	r.Flags = CreateMode(d.Int())
	r.TTL = d.Long()
}

type DeleteRequest struct {
	Path    string
	Version int32
}

func (r *DeleteRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int(r.Version)
}

func (r *DeleteRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Version = d.Int()
}

type GetChildrenRequest struct {
	Path  string
	Watch bool
}

func (r *GetChildrenRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Bool(r.Watch)
}

func (r *GetChildrenRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Watch = d.Bool()
}

type GetAllChildrenNumberRequest struct {
	Path string
}

func (r *GetAllChildrenNumberRequest) Encode(e *Encoder) {
	e.String(r.Path)
}

func (r *GetAllChildrenNumberRequest) Decode(d *Decoder) {
	r.Path = d.String()
}

type GetChildren2Request struct {
	Path  string
	Watch bool
}

func (r *GetChildren2Request) Encode(e *Encoder) {
	e.String(r.Path)
	e.Bool(r.Watch)
}

func (r *GetChildren2Request) Decode(d *Decoder) {
	r.Path = d.String()
	r.Watch = d.Bool()
}

type CheckVersionRequest struct {
	Path    string
	Version int32
}

func (r *CheckVersionRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int(r.Version)
}

func (r *CheckVersionRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Version = d.Int()
}

type SyncRequest struct {
	Path string
}

func (r *SyncRequest) Encode(e *Encoder) {
	e.String(r.Path)
}

func (r *SyncRequest) Decode(d *Decoder) {
	r.Path = d.String()
}

type SyncResponse struct {
	Path string
}

func (r *SyncResponse) Encode(e *Encoder) {
	e.String(r.Path)
}

func (r *SyncResponse) Decode(d *Decoder) {
	r.Path = d.String()
}

type GetACLRequest struct {
	Path string
}

func (r *GetACLRequest) Encode(e *Encoder) {
	e.String(r.Path)
}

func (r *GetACLRequest) Decode(d *Decoder) {
	r.Path = d.String()
}

type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

func (r *SetACLRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.ACLs(r.ACL)
	e.Int(r.Version)
}

func (r *SetACLRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.ACL = d.ACLs()
	r.Version = d.Int()
}

type SetACLResponse struct {
	Stat Stat
}

func (r *SetACLResponse) Encode(e *Encoder) {
	r.Stat.Encode(e)
}

func (r *SetACLResponse) Decode(d *Decoder) {
	r.Stat.Decode(d)
}

type AddWatchRequest struct {
	Path string
	Mode AddWatchMode
}

func (r *AddWatchRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int(int32(r.Mode))
}

func (r *AddWatchRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Mode = AddWatchMode(d.Int())
}

type WatcherEvent struct {
	Type  EventType
	State KeeperState
	Path  string
}

func (r *WatcherEvent) Encode(e *Encoder) {
	e.Int(int32(r.Type))
	e.Int(int32(r.State))
	e.String(r.Path)
}

func (r *WatcherEvent) Decode(d *Decoder) {
	r.Type = EventType(d.Int())
	r.State = KeeperState(d.Int())
	r.Path = d.String()
}

type ErrorResponse struct {
	Err Code
}

func (r *ErrorResponse) Encode(e *Encoder) {
	e.Int(int32(r.Err))
}

func (r *ErrorResponse) Decode(d *Decoder) {
	r.Err = Code(d.Int())
}

type CreateResponse struct {
	Path string
}

func (r *CreateResponse) Encode(e *Encoder) {
	e.String(r.Path)
}

func (r *CreateResponse) Decode(d *Decoder) {
	r.Path = d.String()
}

type Create2Response struct {
	Path string
	Stat Stat
}

func (r *Create2Response) Encode(e *Encoder) {
	e.String(r.Path)
	r.Stat.Encode(e)
}

func (r *Create2Response) Decode(d *Decoder) {
	r.Path = d.String()
	r.Stat.Decode(d)
}

type ExistsRequest struct {
	Path  string
	Watch bool
}

func (r *ExistsRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Bool(r.Watch)
}

func (r *ExistsRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Watch = d.Bool()
}

type ExistsResponse struct {
	Stat Stat
}

func (r *ExistsResponse) Encode(e *Encoder) {
	r.Stat.Encode(e)
}

func (r *ExistsResponse) Decode(d *Decoder) {
	r.Stat.Decode(d)
}

type GetDataResponse struct {
	Data []byte
	Stat Stat
}

func (r *GetDataResponse) Encode(e *Encoder) {
	e.Buffer(r.Data)
	r.Stat.Encode(e)
}

func (r *GetDataResponse) Decode(d *Decoder) {
	r.Data = d.Buffer()
	r.Stat.Decode(d)
}

type GetChildrenResponse struct {
	Children []string
}

func (r *GetChildrenResponse) Encode(e *Encoder) {
	e.Strings(r.Children)
}

func (r *GetChildrenResponse) Decode(d *Decoder) {
	r.Children = d.Strings()
}

type GetAllChildrenNumberResponse struct {
	TotalNumber int32
}

func (r *GetAllChildrenNumberResponse) Encode(e *Encoder) {
	e.Int(r.TotalNumber)
}

func (r *GetAllChildrenNumberResponse) Decode(d *Decoder) {
	r.TotalNumber = d.Int()
}

type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

func (r *GetChildren2Response) Encode(e *Encoder) {
	e.Strings(r.Children)
	r.Stat.Encode(e)
}

func (r *GetChildren2Response) Decode(d *Decoder) {
	r.Children = d.Strings()
	r.Stat.Decode(d)
}

type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

func (r *GetACLResponse) Encode(e *Encoder) {
	e.ACLs(r.ACL)
	r.Stat.Encode(e)
}

func (r *GetACLResponse) Decode(d *Decoder) {
	r.ACL = d.ACLs()
	r.Stat.Decode(d)
}

type CheckWatchesRequest struct {
	Path string
	Type WatcherType
}

func (r *CheckWatchesRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int(int32(r.Type))
}

func (r *CheckWatchesRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Type = WatcherType(d.Int())
}

type RemoveWatchesRequest struct {
	Path string
	Type WatcherType
}

func (r *RemoveWatchesRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int(int32(r.Type))
}

func (r *RemoveWatchesRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Type = WatcherType(d.Int())
}

type GetEphemeralsRequest struct {
	PrefixPath string
}

func (r *GetEphemeralsRequest) Encode(e *Encoder) {
	e.String(r.PrefixPath)
}

func (r *GetEphemeralsRequest) Decode(d *Decoder) {
	r.PrefixPath = d.String()
}

type GetEphemeralsResponse struct {
	Ephemerals []string
}

func (r *GetEphemeralsResponse) Encode(e *Encoder) {
	e.Strings(r.Ephemerals)
}

func (r *GetEphemeralsResponse) Decode(d *Decoder) {
	r.Ephemerals = d.Strings()
}

type WhoAmIResponse struct {
	ClientInfo []ClientInfo
}

func (r *WhoAmIResponse) Encode(e *Encoder) {
	encodeClientInfos(e, r.ClientInfo)
}

func (r *WhoAmIResponse) Decode(d *Decoder) {
	r.ClientInfo = decodeClientInfos(d)
}

// ConnectRequest opens or resumes a session. ReadOnly is absent in packets of
// clients older than 3.4, so a missing flag decodes as false.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
}

func (r *ConnectRequest) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Long(r.LastZxidSeen)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	e.Bool(r.ReadOnly)
}

func (r *ConnectRequest) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int()
	r.LastZxidSeen = d.Long()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	if d.Err() == nil && d.Remaining() > 0 {
		r.ReadOnly = d.Bool()
	}
}

// aclSize is the smallest encoding of an ACL: perms and two empty strings.
const aclSize = 12

// ACLs writes a vector of ACLs; nil is written as null.
func (e *Encoder) ACLs(acls []ACL) {
	if acls == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(acls)))
	for i := range acls {
		acls[i].Encode(e)
	}
}

// ACLs reads a vector of ACLs; null decodes as nil.
func (d *Decoder) ACLs() []ACL {
	n := d.count(aclSize)
	if n < 0 || d.err != nil {
		return nil
	}
	acls := make([]ACL, n)
	for i := range acls {
		acls[i].Decode(d)
	}
	return acls
}

func encodeClientInfos(e *Encoder, v []ClientInfo) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	for i := range v {
		v[i].Encode(e)
	}
}

func decodeClientInfos(d *Decoder) []ClientInfo {
	n := d.count(8)
	if n < 0 || d.err != nil {
		return nil
	}
	v := make([]ClientInfo, n)
	for i := range v {
		v[i].Decode(d)
	}
	return v
}
