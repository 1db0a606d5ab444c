package quota

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Quota keys (Kafka's QuotaConfig names).
const (
	ProducerByteRate       = "producer_byte_rate"       // LONG, bytes/s of Produce requests
	ConsumerByteRate       = "consumer_byte_rate"       // LONG, bytes/s of Fetch responses
	RequestPercentage      = "request_percentage"       // DOUBLE, percent of one thread per window
	ControllerMutationRate = "controller_mutation_rate" // DOUBLE, partitions created/deleted per second
	ConnectionCreationRate = "connection_creation_rate" // INT, new connections per second (ips only)
)

// ErrInvalid is wrapped by every validation error of this package; the API
// layer maps it to INVALID_REQUEST.
var ErrInvalid = errors.New("invalid quota")

// ValidationError is one rejected entity or key. Path is the entity path;
// Key is empty when the whole entity is at fault.
type ValidationError struct {
	Path, Key string
	Msg       string
}

func (e *ValidationError) Error() string {
	if e.Key == "" {
		return e.Path + ": " + e.Msg
	}
	return e.Path + " " + e.Key + ": " + e.Msg
}

func (e *ValidationError) Unwrap() error { return ErrInvalid }

// keyID indexes the user/client quota types on the hot path.
type keyID int

const (
	kProduce keyID = iota
	kFetch
	kRequest
	kMutation
	numKeys
)

var keyNames = [numKeys]string{ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate}

func keyByName(name string) (keyID, bool) {
	for k, n := range keyNames {
		if n == name {
			return keyID(k), true
		}
	}
	return 0, false
}

type valueType int

const (
	typeLong valueType = iota
	typeDouble
	typeInt
)

var keyTypes = map[string]valueType{
	ProducerByteRate:       typeLong,
	ConsumerByteRate:       typeLong,
	RequestPercentage:      typeDouble,
	ControllerMutationRate: typeDouble,
	ConnectionCreationRate: typeInt,
}

// ValidateKey checks that key may be set on the entity at path and that
// value is acceptable: finite and > 0, and a whole number in range where
// Kafka's type is LONG or INT. Kafka allows connection_creation_rate = 0;
// kbroker asks for > 0 everywhere (remove the key for "unlimited").
func ValidateKey(path, key string, value float64) error {
	e, err := parseEntity(path)
	if err != nil {
		return &ValidationError{Path: path, Msg: err.Error()}
	}
	hasIP := e.hasIP
	bad := func(format string, a ...any) error {
		return &ValidationError{Path: path, Key: key, Msg: fmt.Sprintf(format, a...)}
	}
	typ, known := keyTypes[key]
	switch {
	case !known && hasIP:
		return bad("unknown quota key for an ip entity (valid: %s)", ConnectionCreationRate)
	case !known:
		return bad("unknown quota key for a user/client entity (valid: %s, %s, %s, %s)",
			ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate)
	case hasIP && key != ConnectionCreationRate:
		return bad("applies to user and client-id entities, not ip entities")
	case !hasIP && key == ConnectionCreationRate:
		return bad("applies to ip entities only")
	}
	v := strconv.FormatFloat(value, 'g', -1, 64)
	switch {
	case math.IsNaN(value) || math.IsInf(value, 0):
		return bad("value %s must be a finite number", v)
	case value <= 0:
		return bad("value %s must be greater than 0", v)
	case typ != typeDouble && value != math.Trunc(value):
		return bad("value %s must be a whole number (%s)", v, typeName(typ))
	case typ == typeLong && value >= math.MaxInt64: // float64(MaxInt64) is 2^63
		return bad("value %s is out of range for LONG (at most %d)", v, int64(math.MaxInt64))
	case typ == typeInt && value > math.MaxInt32:
		return bad("value %s is out of range for INT (at most %d)", v, math.MaxInt32)
	}
	return nil
}

func typeName(t valueType) string {
	switch t {
	case typeLong:
		return "LONG"
	case typeInt:
		return "INT"
	}
	return "DOUBLE"
}

// validValue is the check SetOverrides applies to values it is handed:
// anything ValidateKey would reject on type grounds is ignored (treated as
// absent) rather than allowed to poison the arithmetic.
func validValue(v float64) bool { return v > 0 && !math.IsInf(v, 0) } // NaN > 0 is false
