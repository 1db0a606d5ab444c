package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client administers a cluster through one kgo client.
type Client struct {
	cl    *kgo.Client
	owned bool
}

// New builds a client from kgo options (at least kgo.SeedBrokers). The
// client owns the kgo client it creates: Close closes it.
func New(opts ...kgo.Opt) (*Client, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &Client{cl: cl, owned: true}, nil
}

// NewFromClient administers through an existing kgo client, which the
// caller keeps owning (Close leaves it open).
func NewFromClient(cl *kgo.Client) *Client { return &Client{cl: cl} }

// Kgo is the underlying kgo client, for requests this package does not wrap.
func (c *Client) Kgo() *kgo.Client { return c.cl }

// Close closes the kgo client if New created it.
func (c *Client) Close() {
	if c.owned {
		c.cl.Close()
	}
}

// Error is one failure reported by the broker (or detected before sending)
// for one resource or for a whole request.
type Error struct {
	// Resource names what failed, e.g. "topic t" or "user-principal 'u'";
	// empty for a request-level error.
	Resource string
	// Err is the Kafka error (a *kerr.Error, so errors.Is(err,
	// kerr.InvalidConfig) works) or a client-side error.
	Err error
	// Message is the broker's error message, when it sent one.
	Message string
}

// Error reads "topic t: INVALID_CONFIG: Invalid value x for configuration
// retention.ms: Not a number of type LONG".
func (e *Error) Error() string {
	s := e.Err.Error()
	if ke, ok := e.Err.(*kerr.Error); ok {
		s = ke.Message
		if e.Message == "" {
			s += ": " + ke.Description
		}
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Resource != "" {
		s = e.Resource + ": " + s
	}
	return s
}

// Unwrap gives the Kafka error, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// Code is the Kafka error code (kerr's), -1 for an error that has none.
func (e *Error) Code() int16 {
	var ke *kerr.Error
	if errors.As(e.Err, &ke) {
		return ke.Code
	}
	return -1
}

// codeError turns a response's error code and message into an *Error, or
// nil when the code is 0.
func codeError(resource string, code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	e := &Error{Resource: resource, Err: err}
	if msg != nil {
		e.Message = *msg
	}
	return e
}

// clientError is an error found before anything was sent, reported as
// Kafka would (INVALID_REQUEST) so callers handle both alike.
func clientError(resource, format string, args ...any) error {
	return &Error{Resource: resource, Err: kerr.InvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// request issues req to any broker and returns the typed response.
func request[R kmsg.Response](ctx context.Context, c *Client, req kmsg.Request) (R, error) {
	var zero R
	resp, err := c.cl.Request(ctx, req)
	if err != nil {
		return zero, err
	}
	return resp.(R), nil
}

// joinErrs joins the non-nil errors in order, nil if there are none.
func joinErrs(errs []error) error { return errors.Join(errs...) }

// Supports reports whether the broker answering advertises API key (for
// example 50 for DescribeUserScramCredentials), for callers that want to
// degrade gracefully on brokers without it.
func (c *Client) Supports(ctx context.Context, key int16) (bool, error) {
	resp, err := request[*kmsg.ApiVersionsResponse](ctx, c, kmsg.NewPtrApiVersionsRequest())
	if err != nil {
		return false, err
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return true, nil
		}
	}
	return false, nil
}
