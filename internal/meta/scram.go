package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"kbroker/internal/auth"
)

// SCRAM credentials live one per user and mechanism (Kafka's
// UserScramCredentialRecord):
//
//	scram/<escaped user>/<mechanism>   {"salt","stored_key","server_key","iterations"} (base64 keys)
//
// Never the password: only what RFC 5802 needs to check a proof.
const prefixScram = "scram/"

// ErrNoCredential is a deletion of a credential that does not exist
// (RESOURCE_NOT_FOUND).
var ErrNoCredential = errors.New("Attempt to delete a user credential that does not exist")

type scramJSON struct {
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int    `json:"iterations"`
}

func scramKey(user, mechanism string) string { return prefixScram + escape(user) + "/" + mechanism }

func parseScramKey(key string) (user, mechanism string, ok bool) {
	rest, found := strings.CutPrefix(key, prefixScram)
	if !found {
		return "", "", false
	}
	u, m, found := strings.Cut(rest, "/")
	if !found || u == "" || m == "" || strings.Contains(m, "/") {
		return "", "", false
	}
	return unescape(u), m, true
}

// ScramSlot names one stored credential: a user's, for one mechanism.
type ScramSlot struct{ User, Mechanism string }

// ScramDelta holds the credentials a batch wrote; nil: deleted.
type ScramDelta map[ScramSlot]*auth.Credential

// The SCRAM sub-image is user → mechanism → credential, a plain map copied
// on change (credentials change at admin rates); a changed user's inner
// map is copied too, so older snapshots stay intact.
var scramKind = recordKind{
	decode: func(d *Delta, c Change) (bool, error) {
		if !hasPrefix(c.Key, prefixScram) {
			return false, nil
		}
		user, mech, ok := parseScramKey(c.Key)
		if !ok {
			return true, nil
		}
		var cred *auth.Credential
		if !c.Deleted {
			var j scramJSON
			if err := json.Unmarshal(c.Value, &j); err != nil {
				return true, fmt.Errorf("decoding %s: %w", c.Key, err)
			}
			cred = &auth.Credential{Mechanism: mech, Salt: j.Salt, StoredKey: j.StoredKey, ServerKey: j.ServerKey, Iterations: j.Iterations}
		}
		setDelta(&d.Scram, ScramSlot{user, mech}, cred)
		return true, nil
	},
	apply: func(next *Snapshot, d *Delta) {
		if len(d.Scram) == 0 {
			return
		}
		m := maps.Clone(next.scram)
		if m == nil {
			m = map[string]map[string]auth.Credential{}
		}
		inners := map[string]map[string]auth.Credential{} // the changed users', copied
		for slot, cred := range d.Scram {
			inner, ok := inners[slot.User]
			if !ok {
				if inner = maps.Clone(m[slot.User]); inner == nil {
					inner = map[string]auth.Credential{}
				}
				inners[slot.User] = inner
			}
			if cred == nil {
				delete(inner, slot.Mechanism)
			} else {
				inner[slot.Mechanism] = *cred
			}
		}
		for user, inner := range inners {
			if len(inner) == 0 {
				delete(m, user)
			} else {
				m[user] = inner
			}
		}
		next.scram = m
	},
	merge: func(d, later *Delta) { mergeInto(&d.Scram, later.Scram) },
}

// ScramCredential finds a user's credential for a mechanism.
func (s *Snapshot) ScramCredential(user, mechanism string) (auth.Credential, bool) {
	c, ok := s.scram[user][mechanism]
	return c, ok
}

// ScramCredentials holds every credential by user, then mechanism. The map
// is shared: never modify it.
func (s *Snapshot) ScramCredentials() map[string]map[string]auth.Credential { return s.scram }

// ScramChange is one user's AlterUserScramCredentials work.
type ScramChange struct {
	Deletions []string          // mechanisms
	Upserts   []auth.Credential // Mechanism set
	// IfAbsent applies the upserts only when the user has no credential for
	// that mechanism yet (bootstrap users).
	IfAbsent bool
}

// AlterScram applies one user's deletions and upsertions in one
// transaction: all of them or none. Deleting a credential that does not
// exist fails with ErrNoCredential. It reports whether anything was written.
func (s *Store) AlterScram(ctx context.Context, user string, ch ScramChange) (bool, error) {
	wrote := false
	err := s.Update(ctx, func(tx Tx) error {
		wrote = false
		for _, mech := range ch.Deletions {
			key := scramKey(user, mech)
			if _, ok := tx.Get(key); !ok {
				return ErrNoCredential
			}
			tx.Delete(key)
			wrote = true
		}
		for _, c := range ch.Upserts {
			key := scramKey(user, c.Mechanism)
			if _, ok := tx.Get(key); ok && ch.IfAbsent {
				continue
			}
			putJSON(tx, key, scramJSON{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations})
			wrote = true
		}
		return nil
	})
	return wrote, err
}
