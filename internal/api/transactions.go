package api

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/auth"
	"kbroker/internal/group"
	"kbroker/internal/txn"
	"kbroker/internal/wire"
)

// txnErrorCode is the code of a transaction coordinator's answer to a
// request of version: PRODUCER_FENCED exists from fencedSince on (KIP-588);
// older versions get INVALID_PRODUCER_EPOCH, as Kafka answers them.
func txnErrorCode(e *kerr.Error, version, fencedSince int16) int16 {
	switch {
	case e == nil:
		return 0
	case e == kerr.ProducerFenced && version < fencedSince:
		return kerr.InvalidProducerEpoch.Code
	}
	return e.Code
}

// txnRefusal is the error of a transactional request refused before it
// reaches the coordinator: TRANSACTIONAL_ID WRITE denied, or no
// coordinator here; 0 otherwise.
func (s *Server) txnRefusal(c *wire.Conn, id string) int16 {
	switch {
	case !s.transactionalIDAllowed(c, id):
		return kerr.TransactionalIDAuthorizationFailed.Code
	case s.Txns == nil:
		return kerr.CoordinatorNotAvailable.Code
	}
	return 0
}

// transactionalIDDescribable is DescribeTransactions' and ListTransactions'
// rule: DESCRIBE on the transactional id (WRITE implies it).
func (s *Server) transactionalIDDescribable(c *wire.Conn, id string) bool {
	return s.allowed(c, auth.OpDescribe, auth.ResourceTransactionalID, id)
}

// internalTopic reports Kafka's internal topics, which clients may not add
// to a transaction.
func internalTopic(name string) bool { return name == group.Topic || name == txn.Topic }
