// Package quota is kbroker's client-quota engine: quota entities and their
// paths, the precedence that picks the limit for a connection, measurement
// of usage, the throttle time to answer with, and per-entity metrics. It does
// no networking and no storage: the broker hands it the overrides from the
// metadata store (SetOverrides) and calls the Record methods on its request
// paths.
//
// # Entities and paths
//
// Entity paths are KIP-55's ZooKeeper paths without the config/ prefix,
// names sanitized with Kafka's Sanitizer (Sanitize) and the default entity
// written "<default>":
//
//	users/<u>   users/<u>/clients/<c>   users/<u>/clients/<default>   users/<default>
//	users/<default>/clients/<c>   users/<default>/clients/<default>
//	clients/<c>   clients/<default>   ips/<ip>   ips/<default>
//
// User is the principal name (no "User:" prefix; PLAINTEXT is ANONYMOUS).
// Keys: producer_byte_rate and consumer_byte_rate (LONG, bytes/s),
// request_percentage (DOUBLE, percent of one thread), controller_mutation_rate
// (DOUBLE, partitions/s) on user/client entities; connection_creation_rate
// (INT, connections/s) on ip entities only. Values must be > 0.
//
// # Precedence
//
// Each key is resolved on its own: a level counts only for the keys it sets.
// Quotas apply per broker, as in Kafka. For a connection of user U with
// client-id C, the first level that sets the key wins; "shared by" says whose
// usage is measured together, which is also the metric labels (user,
// client_id).
//
// Independent mode (client.quota.subquota.mode=independent, the default) is
// Apache Kafka's order with the server.properties static defaults
// (quota.user.*.default, quota.*.default) slotted in just below the
// dynamic <default> entity they stand for:
//
//	    level                                    shared by                     labels
//	 1  users/U/clients/C                        (U, C) alone                  U, C
//	 2  users/U/clients/<default>                each (U, c) its own copy      U, C
//	 3  users/U                                  all clients of U              U, ""
//	 4  users/<default>/clients/C                each (u, C) its own copy      U, C
//	 5  users/<default>/clients/<default>        each (u, c) its own copy      U, C
//	 6  users/<default>                          all clients of each user      U, ""
//	 7  quota.user.{producer,consumer}.default   as 6                          U, ""
//	 8  clients/C                                C across all users            "", C
//	 9  clients/<default>                        each client-id across users   "", C
//	10  quota.{producer,consumer}.default        as 9                          "", C
//
// Level 10 is reached only when no user-level value applies: the client-id
// defaults apply only if the default user quota is unlimited. Independent
// mode shares the static client default per client-id, as Kafka did (like
// level 9); reserved mode gives each (user, client-id) pair its own. The
// static defaults exist for producer and consumer byte rates only (Kafka
// removed them in 3.0, KAFKA-12591; kbroker still reads them).
//
// A (U, C) quota is never carved out of U's: with user2 = 4096,
// (user2, clientA) = 10 and (user2, clientB) = 30, clientA gets 10, clientB
// 30 and every other client of user2 shares 4096, so user2 can reach 4136
// bytes/s.
//
// Reserved mode (client.quota.subquota.mode=reserved) is kbroker's own
// extension, not part of KIP-55 or Apache Kafka: a user's quota is a hard
// total over all of the user's clients. Any user-level total (explicit,
// dynamic default or static default) is therefore consulted before every
// level that would give a client its own quota, and only explicit (U, C)
// sub-quotas come first, reserved out of the total:
//
//	    level                                    shared by                                 labels
//	 1  users/U/clients/C                        (U, C) alone, reserved out of U's total   U, C
//	 2  users/U                                  U's other clients: total − reserved       U, ""
//	 3  users/<default>                          as 2, per user                            U, ""
//	 4  quota.user.{producer,consumer}.default   as 2, per user                            U, ""
//	 5  users/U/clients/<default>                each (U, c) its own                       U, C
//	 6  users/<default>/clients/C                each (u, C) its own                       U, C
//	 7  users/<default>/clients/<default>        each (u, c) its own                       U, C
//	 8  clients/C                                each (u, C) its own, for its sole use     U, C
//	 9  clients/<default>                        each (u, c) its own                       U, C
//	10  quota.{producer,consumer}.default        each (u, c) its own                       U, C
//
// "reserved" is the sum of U's explicit users/U/clients/C values for the key,
// subtracted from whichever total applies to U (so a users/<default> total is
// reduced per user by that user's own reservations). With user2 = 4096/8192,
// clientA = 10/20, clientB = 30/40, the other clients of user2 share
// 4056/8132. Levels 5–10 apply only to users with no total at all, so they
// can never let a bounded user exceed its total; with a total they are
// listed by Resolve but shadowed. (U, <default>) is not a reservation: the
// number of client-ids is unbounded, so nothing could be set aside for them.
// ValidateOverrides rejects reservations summing above the total; if a
// total is later lowered below them anyway, the unreserved clients keep 0.1 %
// of it rather than nothing.
//
// # Measurement
//
// Every quota is a token bucket in the quota's unit, refilled at the limit,
// starting full. A request is recorded first and accepted; if that puts the
// bucket into debt, the throttle is debt ÷ rate (rounded up to the
// millisecond) and the broker mutes the connection for it after answering
// (KIP-219 "send then mute"). A client that waits the throttle sends its next
// request exactly when the debt is repaid, so the long-run rate is the limit
// and never drifts: the bucket is the running integral of (limit − usage),
// so rounding and timing errors of one request are paid back by the next.
//
//	quota type              burst (capacity)         debt            throttle cap
//	producer/consumer byte  1 window of quota        unbounded       none (as Kafka)
//	request_percentage      1 window of quota        samples×window  1 window (as Kafka)
//	controller_mutation     samples×window of quota  unbounded       none (KIP-599, Kafka's bucket)
//	connection_creation     max(½ window, 1 conn)    none            time to the next token
//
// Why not Kafka's sampled Rate (its SampledStat windows): it divides the sum of 11
// one-second samples by at least 10 s, so a fresh or idle client may send
// about 10 s of quota at line rate before the first throttle, and the throttle
// (O − T)/T × W then brings the 10-s average back to T slowly, which
// overshoots 10–30 % over the first 30 s and gives throttles of seconds for
// large requests; its error shrinks only as the run grows. The bucket's
// initial burst is one window of quota (plus the one request that crosses
// it), its steady error is below 1 % and its throttles are one request's
// worth. sim_test.go runs both on the same greedy-producer traffic (Kafka's
// Rate is implemented there, in the test only, and reproduces Kafka's own
// testQuotaViolation numbers) and asserts our bounds; run
// `go test -run TestAccuracy -v ./internal/quota/` for the numbers. Quota
// 1 MiB/s, 0.2 ms round trip, client waiting every throttle, 40 s (steady =
// bytes in [10 s, 40 s) against quota; burst = bytes accepted before the
// first throttle, in seconds of quota):
//
//	request   algorithm          steady error   initial burst   max throttle
//	16 KiB    token bucket (us)  0.00 %          1.0 s           16 ms
//	16 KiB    Kafka 11 × 1 s     10.05 %        10.1 s           1.016 s
//	1 MiB     token bucket (us)  0.00 %          1.0 s           1 s
//	1 MiB     Kafka 11 × 1 s     6.67 %         10.0 s           5 s
//
// Fetch: a throttled fetch returns no data and is un-recorded (Kafka), so a
// fetch is served only when the bucket holds min(response, burst) and the
// throttle is the time until it will. FetchByteCap is one burst (quota ×
// window), so a full bucket always covers a capped response and a small quota
// never starves a consumer (KAFKA-9677); a single record batch larger than
// the cap is still served from a full bucket and paid back as debt.
//
// request_percentage: handler time d counts d×100/1 s percent-seconds, so
// a limit of 50 allows half of one thread; its debt is bounded at
// samples × window of quota, the most Kafka's sampled window ever
// remembers, and its throttle is capped at one window.
//
// controller_mutation_rate uses Kafka's TokenBucket shape exactly (burst
// samples × window × quota, 11 s of quota by default, unbounded debt): strict
// requests are refused while the bucket is in debt (CheckMutations), and an
// accepted request may drive it into debt (RecordMutations).
//
// connection_creation_rate: a connection is admitted when a whole token is
// available, and a refused one is not counted (so a dial loop is admitted at
// exactly the limit); the burst is half a window so that a 13-s dial loop
// (benchmark B7) stays within 1.04× the limit.
//
// # Changes and lifetime
//
// SetOverrides installs a new immutable generation. When only a few entities
// differ from the previous call (judged by the identity of their inner
// maps, which the metadata store shares between snapshots), the generation is
// derived copy-on-write from the previous one, touching only the index
// shards that change: about 10 ms with 150,000 entities, against ~200 ms
// for a full compile. Each (user, client-id) keeps a binding to its
// sensors that is re-resolved on its first record under a new generation, so
// a change applies to live connections on their next request. A sensor
// whose entity is unchanged keeps its bucket: usage up to the change is
// settled at the old rate, the rest at the new one. Sensors, bindings and
// metric series idle for IdleTTL (1 h, Kafka's sensor expiry) are dropped
// by a background sweep, so cardinality stays bounded by active entities.
//
// Validation: ValidateKey for one key of one entity; ValidateChanges for
// an alteration (AlterClientQuotas) against the installed set;
// ValidateOverrides for a whole proposed set. All errors wrap ErrInvalid
// and are *ValidationError values naming the entity and key.
//
// # Cost and locking
//
// The steady path of a Record call is an atomic load, a read-locked lookup
// in one of 64 shards keyed by (user, client-id) (a struct of the two
// strings: no concatenation, no allocation) and a per-sensor mutex: O(1) in
// the number of entities, about 75 ns. No lock is held while another is
// taken, so there is no lock order to keep.
package quota
