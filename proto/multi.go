package proto

// MultiOp is one operation of a multi or multiRead request.
type MultiOp struct {
	Type OpCode
	// Req is the op's request record: *CreateRequest (create, create2,
	// createContainer), *CreateTTLRequest, *DeleteRequest, *SetDataRequest,
	// *CheckVersionRequest, *GetChildrenRequest or *GetDataRequest.
	Req Record
}

// MultiRequest is the body of OpMulti and OpMultiRead: a sequence of
// MultiHeader-prefixed ops closed by a header with Done set.
type MultiRequest struct {
	Ops []MultiOp
}

// multiEnd closes a multi request or response.
var multiEnd = MultiHeader{Type: -1, Done: true, Err: -1}

func (r *MultiRequest) Encode(e *Encoder) {
	for _, op := range r.Ops {
		h := MultiHeader{Type: op.Type, Err: -1}
		h.Encode(e)
		op.Req.Encode(e)
	}
	multiEnd.Encode(e)
}

func (r *MultiRequest) Decode(d *Decoder) {
	r.Ops = nil
	for d.Err() == nil {
		var h MultiHeader
		h.Decode(d)
		if d.Err() != nil || h.Done {
			return
		}
		req := newMultiOpRequest(h.Type)
		if req == nil {
			d.Fail("invalid type of op %d in multi", h.Type)
			return
		}
		req.Decode(d)
		r.Ops = append(r.Ops, MultiOp{Type: h.Type, Req: req})
	}
}

func newMultiOpRequest(t OpCode) Record {
	switch t {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}
	case OpCreateTTL:
		return &CreateTTLRequest{}
	case OpDelete, OpDeleteContainer:
		return &DeleteRequest{}
	case OpSetData:
		return &SetDataRequest{}
	case OpCheck:
		return &CheckVersionRequest{}
	case OpGetChildren:
		return &GetChildrenRequest{}
	case OpGetData:
		return &GetDataRequest{}
	}
	return nil
}

// OpResult is one result of a multi or multiRead response.
type OpResult struct {
	// Type is the op's type, or OpError when the op failed or was rolled
	// back.
	Type OpCode
	// Err is the failure of an OpError result; OK for an op that would have
	// succeeded but was rolled back because another op failed.
	Err Code
	// Resp is the op's response record: *CreateResponse (create),
	// *Create2Response (create2, createContainer, createTTL),
	// *SetDataResponse, *GetDataResponse, *GetChildrenResponse, or nil
	// (delete, check, error).
	Resp Record
}

// MultiResponse is the body of a multi or multiRead reply.
type MultiResponse struct {
	Results []OpResult
}

func (r *MultiResponse) Encode(e *Encoder) {
	for _, res := range r.Results {
		h := MultiHeader{Type: res.Type}
		if res.Type == OpError {
			h.Err = res.Err
		}
		h.Encode(e)
		switch {
		case res.Type == OpError:
			(&ErrorResponse{Err: res.Err}).Encode(e)
		case res.Resp != nil:
			res.Resp.Encode(e)
		}
	}
	multiEnd.Encode(e)
}

func (r *MultiResponse) Decode(d *Decoder) {
	r.Results = nil
	for d.Err() == nil {
		var h MultiHeader
		h.Decode(d)
		if d.Err() != nil || h.Done {
			return
		}
		res := OpResult{Type: h.Type}
		switch h.Type {
		case OpError:
			var er ErrorResponse
			er.Decode(d)
			res.Err = er.Err
		case OpCreate:
			res.Resp = &CreateResponse{}
		case OpCreate2:
			res.Resp = &Create2Response{}
		case OpSetData:
			res.Resp = &SetDataResponse{}
		case OpGetData:
			res.Resp = &GetDataResponse{}
		case OpGetChildren:
			res.Resp = &GetChildrenResponse{}
		case OpDelete, OpCheck:
		default:
			d.Fail("invalid type of op result %d in multi", h.Type)
			return
		}
		if res.Resp != nil {
			res.Resp.Decode(d)
		}
		r.Results = append(r.Results, res)
	}
}
