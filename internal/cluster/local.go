package cluster

import (
	"context"

	"kbroker/internal/meta"
)

// Local is the membership of a single broker on the bbolt store: it
// registers itself in the store and is always the controller.
type Local struct {
	store *meta.Store
	id    int32
}

// NewLocal returns the membership of the only broker of store.
func NewLocal(store *meta.Store, id int32) *Local { return &Local{store: store, id: id} }

// Join writes reg as the only live broker. An unclean shutdown is not
// recorded: with no other replica, no ISR or ELR depends on it.
func (l *Local) Join(ctx context.Context, reg meta.Broker) error {
	reg.UncleanShutdown = false
	return l.store.RegisterLocalBroker(ctx, reg)
}

// Controller is this broker.
func (l *Local) Controller() int32 { return l.id }

func (l *Local) Close() error { return nil }
