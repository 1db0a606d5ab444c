// Package admin is kbroker's administration client: the AdminClient that
// KIP-133 proposes, in Go idiom, on top of franz-go's kgo client. It reads
// and changes configuration (DescribeConfigs, AlterConfigs,
// IncrementalAlterConfigs), client quotas (KIP-546), ACLs (KIP-140), SCRAM
// credentials (KIP-554), topics, consumer groups and transactions (KIP-664:
// listing, describing, finding hanging ones and aborting them) over the
// Kafka protocol only, so tools and programs need no scripts and no access
// to the metadata store.
//
// It works against kbroker and against any Kafka-compatible broker that
// serves these APIs (Apache Kafka, franz-go's kfake, Redpanda…); nothing is
// specific to kbroker except that the USER and CLIENT config resource types
// (kbroker's own) are only understood by brokers that implement them.
//
// Conventions, the same for every call:
//
//   - Deadlines and cancellation come from the context (KIP-133's
//     timeoutMs): ctx bounds the whole call including retries.
//   - A returned error means the request as a whole failed (broker
//     unreachable, authentication failed, API not supported, a request-level
//     error code). Problems of one resource are reported on that resource's
//     result, and every result type has an All method that joins them.
//   - Errors from the broker are *Error values: errors.Is works with franz-go's
//     kerr sentinels (errors.Is(err, kerr.InvalidConfig)), and the broker's
//     own message is kept.
package admin
