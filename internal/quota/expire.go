package quota

// ExpireIdle drops every binding, sensor and ip sensor unused for
// Options.IdleTTL, with the sensors' metric series, and returns how many
// sensors went. Record calls start it in the background every
// Options.ExpireEvery; tests with a fake clock call it directly.
//
// An entity idle that long has a full bucket anyway, so forgetting it
// loses nothing but the metric series; a record racing with the sweep
// may land on a sensor just dropped, which costs that entity a fresh
// (full) bucket, the same state it would have had.
func (m *Manager) ExpireIdle() int {
	cutoff := m.nanos() - m.ttl
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		for k, b := range sh.m {
			if b.lastUse.Load() < cutoff {
				delete(sh.m, k)
			}
		}
		sh.mu.Unlock()
	}
	removed := 0
	m.sensorsMu.Lock()
	for k, s := range m.sensors {
		if s.lastUse.Load() < cutoff {
			delete(m.sensors, k)
			s.dead.Store(true)
			if s.met != nil {
				m.metrics.drop(s.met)
			}
			removed++
		}
	}
	m.sensorsMu.Unlock()
	m.ipMu.Lock()
	for a, s := range m.ips {
		if s.lastUse.Load() < cutoff {
			delete(m.ips, a)
			removed++
		}
	}
	m.ipMu.Unlock()
	return removed
}

func (m *Manager) maybeSweep(now int64) {
	if m.expireEvery == 0 {
		return
	}
	last := m.lastSweep.Load()
	if now-last < m.expireEvery || !m.lastSweep.CompareAndSwap(last, now) {
		return
	}
	go m.ExpireIdle()
}
