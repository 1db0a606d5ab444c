// Package auth holds kbroker's authentication and authorization logic, free of networking and storage:
//
//   - SASL server mechanisms (PLAIN per RFC 4616, SCRAM-SHA-256/512 per RFC 5802/7677) behind one
//     Session interface, with Kafka's client-visible failure messages (sasl.go, plain.go, scram.go);
//   - SCRAM credential math as Kafka's AlterUserScramCredentials and kafka-storage --add-scram do
//     (credential.go);
//   - parsing of Kafka's sasl.jaas.config lines and the listener/mechanism lookup rule (jaas.go);
//   - the password encoder for dynamic password configs at rest (password_encoder.go);
//   - ACLs, DescribeAcls/DeleteAcls filters, CreateAcls validation (acl.go) and an immutable,
//     lock-free, allocation-free authorizer with StandardAuthorizer semantics (authorizer.go).
//
// The connection layer owns per-connection state (handshake, re-authentication, session lifetime);
// the metadata store owns ACLs and SCRAM credentials and hands them to this package.
package auth
