package config

import (
	"strconv"
	"strings"
	"time"
)

// RequestReadTimeoutKey bounds how long one request frame may take to
// arrive: kbroker's own guard against slowloris clients. Apache Kafka has
// no such key; connections.max.idle.ms cannot catch a client that keeps
// sending a byte now and then.
const RequestReadTimeoutKey = "kbroker.request.read.timeout.ms"

// requestReadTimeoutDef declares RequestReadTimeoutKey. The default, two
// minutes, is four times the 30 s request.timeout.ms of Kafka's Java
// clients and twice librdkafka's 60 s socket.timeout.ms: an honest client
// whose request has not arrived by then has long given up on its answer
// and reconnected, however slow its link.
func requestReadTimeoutDef() *Def {
	return &Def{Name: RequestReadTimeoutKey, Type: TypeLong, Default: "120000", Check: atLeast(-1), Mode: ReadOnly,
		Doc: "The longest a request may take to arrive, in milliseconds, from the first byte of its size prefix to its last byte; a connection whose request is slower is closed (and logged). It bounds slowloris clients, which trickle bytes so slowly that connections.max.idle.ms never sees them idle, holding a connection and a request buffer each. The default is well above any client's own request timeout (30 s for Kafka's Java clients, 60 s for librdkafka), so no honest client trips it over a slow link. 0 or -1: no bound. kbroker only; Apache Kafka has no such setting."}
}

// RequestReadTimeout is kbroker.request.read.timeout.ms as a duration; 0:
// no bound (the key at 0 or -1).
func (b *Broker) RequestReadTimeout() time.Duration {
	v, ok := b.Props[RequestReadTimeoutKey]
	if !ok {
		v = Brokers.Lookup(RequestReadTimeoutKey).Default
	}
	ms, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64) // validated by NewBroker
	if ms <= 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}
