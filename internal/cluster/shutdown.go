package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"kbroker/internal/meta"
)

// BeginControlledShutdown marks the registration of broker id as in
// controlled shutdown, which is how a stopping broker asks the controller
// to move its leaderships away and take it out of every ISR (Kafka's
// broker sends the same wish in its heartbeat). The registration is
// rewritten under its own lease, compared on its revision, so it still
// vanishes with the lease; it returns once this broker's store has the
// change. A broker that registers again (a lost lease) keeps the mark: it
// is still stopping, as Kafka's broker keeps asking in every heartbeat.
func (m *Member) BeginControlledShutdown(ctx context.Context, id int32) error {
	m.shuttingDown.Store(true) // before the write, so a re-registration racing it is marked too
	err := m.rewriteRegistration(ctx, id, func(reg *meta.Broker) bool {
		reg.InControlledShutdown = true
		return true
	})
	if errors.Is(err, errNotRegistered) {
		return fmt.Errorf("cluster: broker %d is not registered", id)
	}
	return err
}

// errNotRegistered: the broker has no registration to rewrite.
var errNotRegistered = errors.New("cluster: broker not registered")

// rewriteRegistration applies change to broker id's registration and
// writes it back under its own lease, compared on its revision, so it
// still vanishes with the lease; a registration written again in between
// (a lost lease) is changed in its turn. change reports whether there is
// anything to write. It returns once this broker's store has the change;
// errNotRegistered when id has no registration.
func (m *Member) rewriteRegistration(ctx context.Context, id int32, change func(*meta.Broker) bool) error {
	key := m.prefix + meta.BrokerKey(id)
	for {
		cctx, cancel := context.WithTimeout(ctx, m.timeout)
		resp, err := m.cli.Get(cctx, key)
		cancel()
		if err != nil {
			return fmt.Errorf("cluster: reading the registration of broker %d: %w: %v", id, meta.ErrUnavailable, err)
		}
		if len(resp.Kvs) == 0 {
			return errNotRegistered
		}
		kv := resp.Kvs[0]
		var reg meta.Broker
		if err := json.Unmarshal(kv.Value, &reg); err != nil {
			return fmt.Errorf("cluster: decoding the registration of broker %d: %w", id, err)
		}
		if !change(&reg) {
			return nil
		}
		value, err := json.Marshal(reg)
		if err != nil {
			return err
		}
		cctx, cancel = context.WithTimeout(ctx, m.timeout)
		txn, err := m.cli.Txn(cctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(clientv3.OpPut(key, string(value), clientv3.WithLease(clientv3.LeaseID(kv.Lease)))).
			Commit()
		cancel()
		if err != nil {
			return fmt.Errorf("cluster: rewriting the registration of broker %d: %w: %v", id, meta.ErrUnavailable, err)
		}
		if !txn.Succeeded {
			continue // re-registered or rewritten in between: change the new one
		}
		wctx, cancel := context.WithTimeout(ctx, m.timeout)
		defer cancel()
		return m.store.WaitFor(wctx, txn.Header.Revision)
	}
}

// BeginControlledShutdown on the single broker of a bbolt store does
// nothing: no other broker could lead its partitions.
func (l *Local) BeginControlledShutdown(context.Context, int32) error { return nil }
