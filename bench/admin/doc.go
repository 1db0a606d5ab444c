// Package admin holds the client side of kbench's admin suite (B4–B9 of the
// performance anchors, and the SCRAM handshake rate): quota accuracy,
// quota-change propagation, connection and controller-mutation rates, and
// the cost of configs and quotas at scale. Each benchmark talks to one
// running kbroker (its address) with the franz-go client, or with raw
// kmsg-encoded requests where a field must be seen exactly (throttle times,
// response sizes, unanswered connections). Starting and stopping brokers is
// the caller's business (cmd/kbench, package broker).
package admin
