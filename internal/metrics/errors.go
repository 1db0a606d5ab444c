package metrics

import (
	"reflect"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CountErrors counts every error code a response of API key carries, at
// any depth (a Produce response has one per partition), as Kafka's
// ErrorsPerSec counts each error of a response. Unlike Kafka it does not
// count NONE: the request counters already tell how many were answered.
func (m *Broker) CountErrors(key int16, resp kmsg.Response) {
	if resp == nil {
		return
	}
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return
	}
	v = v.Elem()
	planFor(v.Type()).walk(v, func(code int16) { m.errorCounter(key, code).Inc() })
}

// errorCounter resolves the counter of (key, code) once.
func (m *Broker) errorCounter(key, code int16) prometheus.Counter {
	id := uint32(uint16(key))<<16 | uint32(uint16(code))
	if c, ok := m.errorCounters.Load(id); ok {
		return c.(prometheus.Counter)
	}
	c := m.RequestErrors.WithLabelValues(kmsg.NameForKey(key), errorName(code))
	m.errorCounters.Store(id, c)
	return c
}

// errorName is Kafka's name of code (UNKNOWN_TOPIC_OR_PARTITION), or the
// number for a code kerr does not know.
func errorName(code int16) string {
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && e.Code == code {
		return e.Message
	}
	return strconv.Itoa(int(code))
}

// errorPlan says where the ErrorCode fields of a kmsg struct type are:
// directly, or in nested structs and slices of structs. Planned once per
// type, so a response is walked without looking at the fields that cannot
// hold one.
type errorPlan struct {
	codes  []int           // indexes of int16 ErrorCode fields
	nested []nestedErrPlan // struct and []struct fields holding some
}

type nestedErrPlan struct {
	field int
	slice bool
	plan  *errorPlan
}

var errorPlans sync.Map // reflect.Type → *errorPlan

func planFor(t reflect.Type) *errorPlan {
	if p, ok := errorPlans.Load(t); ok {
		return p.(*errorPlan)
	}
	p := buildPlan(t, map[reflect.Type]bool{})
	errorPlans.Store(t, p)
	return p
}

func buildPlan(t reflect.Type, visiting map[reflect.Type]bool) *errorPlan {
	p := &errorPlan{}
	if visiting[t] {
		return p // a recursive type: its codes are found at the outer level
	}
	visiting[t] = true
	defer delete(visiting, t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch {
		case f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16:
			p.codes = append(p.codes, i)
		case f.Type.Kind() == reflect.Struct:
			if sub := buildPlan(f.Type, visiting); !sub.empty() {
				p.nested = append(p.nested, nestedErrPlan{field: i, plan: sub})
			}
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			if sub := buildPlan(f.Type.Elem(), visiting); !sub.empty() {
				p.nested = append(p.nested, nestedErrPlan{field: i, slice: true, plan: sub})
			}
		}
	}
	return p
}

func (p *errorPlan) empty() bool { return len(p.codes) == 0 && len(p.nested) == 0 }

func (p *errorPlan) walk(v reflect.Value, fn func(code int16)) {
	for _, i := range p.codes {
		if c := int16(v.Field(i).Int()); c != 0 {
			fn(c)
		}
	}
	for _, n := range p.nested {
		f := v.Field(n.field)
		if !n.slice {
			n.plan.walk(f, fn)
			continue
		}
		for j := 0; j < f.Len(); j++ {
			n.plan.walk(f.Index(j), fn)
		}
	}
}
