// Package wire is the broker's network edge: listeners, connections, Kafka
// framing and request headers, dispatch to the API handlers, and writing
// responses in request order.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request is one decoded request with its header.
type Request struct {
	Key           int16
	Version       int16 // as sent by the client
	CorrelationID int32
	ClientID      string // "" when the header's client id is null
	Body          kmsg.Request
	// Unsupported is set for an ApiVersions request whose version is newer
	// than ours: its body was not decoded, and the handler must answer at v0
	// with UNSUPPORTED_VERSION so the client can retry lower (KIP-511).
	Unsupported bool
	// Size is the frame's size in bytes, for quotas and metrics.
	Size int
	// Parked is how long the handler waited rather than worked (a fetch
	// long poll); request-time quotas charge only the rest.
	Parked time.Duration
	// RecordFiles are the Fetch response's record sets a handler left in
	// files, for the connection to send from them (fetchfiles.go).
	RecordFiles RecordFiles

	frame []byte // the bytes Body was decoded from (see releaseFrame)
	// queued is what the request holds of the server's request memory
	// until it is handled (queued.max.request.bytes).
	queued int
	// handleStart and handleEnd bracket the handler's run (timedHandler).
	handleStart, handleEnd time.Time
}

// Versions tells which API keys and versions the broker handles.
type Versions interface {
	Supports(key int16) (min, max int16, ok bool)
}

// errBadRequest closes the connection, as Kafka does for a request it cannot
// parse or whose API key or version it does not know.
var errBadRequest = errors.New("bad request")

// parseRequest decodes a frame (without its size prefix): the request header
// (v1, or v2 with tagged fields for flexible versions) and the body.
func parseRequest(frame []byte, versions Versions) (*Request, error) {
	r := kbin.Reader{Src: frame}
	req := &Request{Key: r.Int16(), Version: r.Int16(), CorrelationID: r.Int32(), Size: len(frame), frame: frame}
	if cid := r.NullableString(); cid != nil {
		req.ClientID = *cid
	}
	if !r.Ok() {
		return nil, fmt.Errorf("%w: truncated request header", errBadRequest)
	}
	body := kmsg.RequestForKey(req.Key)
	min, max, ok := versions.Supports(req.Key)
	if body == nil {
		return nil, fmt.Errorf("%w: unknown API key %d", errBadRequest, req.Key)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s (key %d) is not served", errBadRequest, kmsg.NameForKey(req.Key), req.Key)
	}
	if req.Version < min || req.Version > max {
		if req.Key == int16(kmsg.ApiVersions) && req.Version > max {
			body.SetVersion(0)
			req.Body, req.Unsupported = body, true
			return req, nil
		}
		return nil, fmt.Errorf("%w: %s v%d is not supported (v%d-v%d)", errBadRequest, kmsg.NameForKey(req.Key), req.Version, min, max)
	}
	body.SetVersion(req.Version)
	if body.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if !r.Ok() {
		return nil, fmt.Errorf("%w: truncated request header", errBadRequest)
	}
	if err := body.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("%w: decoding %s v%d: %v", errBadRequest, kmsg.NameForKey(req.Key), req.Version, err)
	}
	req.Body = body
	return req, nil
}

// appendResponse frames resp for req onto dst: size, correlation id, the
// response header's tagged fields when flexible (never for ApiVersions, whose
// response header is always v0 so any client can read it), then the body.
func appendResponse(dst []byte, req *Request, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(req.CorrelationID))
	if resp.IsFlexible() && req.Key != int16(kmsg.ApiVersions) {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
