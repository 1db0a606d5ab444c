// Package refusal is the error a service package returns when it refuses
// what a client asked: one of the package's sentinel errors, which the API
// layer's error table maps to a Kafka error code, with the message for the
// client (Kafka's own wording where Kafka has one).
package refusal

// Error is a refusal of kind, told to the client as Msg.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

// New is a refusal of kind with msg for the client.
func New(kind error, msg string) error { return &Error{Kind: kind, Msg: msg} }
