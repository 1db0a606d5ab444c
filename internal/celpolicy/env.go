package celpolicy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/env"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// The variables every rule can read. Variables that do not apply to an
// operation are empty maps (or 0), so a rule on several operations needs no
// guard against their absence.
var variables = []cel.EnvOption{
	cel.Variable("operation", cel.StringType),
	cel.Variable("principal", cel.MapType(cel.StringType, cel.StringType)),
	cel.Variable("client", cel.MapType(cel.StringType, cel.StringType)),
	cel.Variable("resource", cel.MapType(cel.StringType, cel.StringType)),
	cel.Variable("changes", cel.MapType(cel.StringType, cel.DynType)),
	cel.Variable("configs", cel.MapType(cel.StringType, cel.StringType)),
	cel.Variable("topic", cel.MapType(cel.StringType, cel.DynType)),
	cel.Variable("entity", cel.MapType(cel.StringType, cel.StringType)),
	cel.Variable("quotas", cel.MapType(cel.StringType, cel.DoubleType)),
}

// sharedEnv is newEnv, built once: an environment is immutable and safe
// to share, and building one is most of the cost of a small rule file.
var sharedEnv = sync.OnceValues(newEnv)

// newEnv is the CEL environment rules compile in: the standard library
// with Kafka-unit helpers. CEL's own duration(string) knows no days and
// bytes(string) converts to a byte string, which no policy needs; both
// give way to versions that read the units operators write ("7d",
// "100MiB").
func newEnv() (*cel.Env, error) {
	subset := &env.LibrarySubset{ExcludeFunctions: []*env.Function{
		env.NewFunction(overloads.TypeConvertDuration, env.NewOverload(overloads.StringToDuration, nil, nil)),
		env.NewFunction(overloads.TypeConvertBytes, env.NewOverload(overloads.StringToBytes, nil, nil)),
	}}
	opts := []cel.EnvOption{
		cel.StdLib(cel.StdLibSubset(subset)),
		cel.Function(overloads.TypeConvertDuration,
			cel.Overload("kafka_string_to_duration", []*cel.Type{cel.StringType}, cel.DurationType,
				cel.UnaryBinding(stringFn(func(s string) ref.Val {
					d, err := ParseDuration(s)
					if err != nil {
						return types.NewErr("%v", err)
					}
					return types.Duration{Duration: d}
				})))),
		cel.Function(overloads.TypeConvertBytes,
			cel.Overload("kafka_string_to_byte_count", []*cel.Type{cel.StringType}, cel.IntType,
				cel.UnaryBinding(stringFn(func(s string) ref.Val {
					n, err := ParseBytes(s)
					if err != nil {
						return types.NewErr("%v", err)
					}
					return types.Int(n)
				})))),
		// millis reads a config value in milliseconds (retention.ms, ...)
		// as a duration, to compare with duration("1h").
		cel.Function("millis",
			cel.Overload("millis_string", []*cel.Type{cel.StringType}, cel.DurationType,
				cel.UnaryBinding(stringFn(func(s string) ref.Val {
					n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
					if err != nil {
						return types.NewErr("millis: %q is not an integer", s)
					}
					if n > math.MaxInt64/int64(time.Millisecond) || n < math.MinInt64/int64(time.Millisecond) {
						return types.NewErr("millis: %d is out of range", n)
					}
					return types.Duration{Duration: time.Duration(n) * time.Millisecond}
				}))),
			cel.Overload("millis_int", []*cel.Type{cel.IntType}, cel.DurationType,
				cel.UnaryBinding(func(v ref.Val) ref.Val {
					n := int64(v.(types.Int))
					if n > math.MaxInt64/int64(time.Millisecond) || n < math.MinInt64/int64(time.Millisecond) {
						return types.NewErr("millis: %d is out of range", n)
					}
					return types.Duration{Duration: time.Duration(n) * time.Millisecond}
				}))),
	}
	return cel.NewCustomEnv(append(opts, variables...)...)
}

func stringFn(f func(string) ref.Val) func(ref.Val) ref.Val {
	return func(v ref.Val) ref.Val {
		s, ok := v.(types.String)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		return f(string(s))
	}
}

var durationUnits = []struct {
	suffix string
	unit   time.Duration
}{
	// Longer suffixes first: "ms" before "m" and "s".
	{"ms", time.Millisecond}, {"us", time.Microsecond}, {"µs", time.Microsecond}, {"ns", time.Nanosecond},
	{"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second},
}

// ParseDuration reads a duration as operators write one: a sequence of
// integers with units, "7d", "1h30m", "500ms" (w, d, h, m, s, ms, us, ns).
func ParseDuration(s string) (time.Duration, error) {
	rest := strings.TrimSpace(s)
	if rest == "" {
		return 0, fmt.Errorf("duration: empty")
	}
	neg := strings.HasPrefix(rest, "-")
	rest = strings.TrimPrefix(rest, "-")
	var total time.Duration
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("duration: %q: expected a number", s)
		}
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("duration: %q: %v", s, err)
		}
		rest = rest[i:]
		found := false
		for _, u := range durationUnits {
			if strings.HasPrefix(rest, u.suffix) {
				if n > int64(math.MaxInt64/u.unit) || total > math.MaxInt64-time.Duration(n)*u.unit {
					return 0, fmt.Errorf("duration: %q is out of range", s)
				}
				total += time.Duration(n) * u.unit
				rest = rest[len(u.suffix):]
				found = true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("duration: %q: expected a unit (w, d, h, m, s, ms, us, ns)", s)
		}
	}
	if neg {
		total = -total
	}
	return total, nil
}

var byteUnits = []struct {
	suffix string
	factor int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// ParseBytes reads a size: an integer with an optional unit, binary (KiB,
// MiB, GiB, TiB) or decimal (KB, MB, GB, TB), "100MiB", "1GB", "512".
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	factor := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, factor = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bytes: %q is not a size (an integer with B, KB, KiB, MB, MiB, GB, GiB, TB or TiB)", s)
	}
	if n > math.MaxInt64/factor || n < math.MinInt64/factor {
		return 0, errors.New("bytes: " + strconv.Quote(s) + " is out of range")
	}
	return n * factor, nil
}
