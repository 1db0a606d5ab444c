package api

import (
	"fmt"
	"net"
	"testing"

	"kbroker/internal/auth"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
)

// aclServer is a Server whose authorizer holds n ACLs of other principals
// and prefixes plus alice's WRITE on topic "t".
func aclServer(n int) *Server {
	acls := []auth.ACL{{ResourceType: auth.ResourceTopic, ResourceName: "t", PatternType: auth.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: auth.OpWrite, Permission: auth.PermissionAllow}}
	for i := range n {
		pt := auth.PatternLiteral
		if i%2 == 0 {
			pt = auth.PatternPrefixed
		}
		acls = append(acls, auth.ACL{ResourceType: auth.ResourceTopic, ResourceName: fmt.Sprintf("topic-%d", i), PatternType: pt,
			Principal: fmt.Sprintf("User:u%d", i%97), Host: "*", Operation: auth.OpRead, Permission: auth.PermissionAllow})
	}
	a := NewAuthorization([]string{"User:admin"}, false)
	a.SetACLs(acls)
	return &Server{Deps: Deps{Authz: a}}
}

func aliceConn() *wire.Conn {
	c := &wire.Conn{Principal: "User:alice", Remote: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5000}}
	c.Host() // cached on the connection's first request
	return c
}

// The produce-path check takes no lock and allocates nothing, with 10,000 ACLs.
func TestProduceAuthorizationDoesNotAllocate(t *testing.T) {
	s, c := aclServer(10000), aliceConn()
	snap := &meta.Snapshot{}
	ref := partitionRef{name: "t"}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := s.produceAllowed(c, snap, ref, true); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per produce authorization", allocs)
	}
	if s.topicAllowed(c, auth.OpWrite, "topic-3") == nil {
		t.Fatal("alice may write a topic she has no ACL for")
	}
}

func BenchmarkProduceAuthorization10kACLs(b *testing.B) {
	s, c := aclServer(10000), aliceConn()
	snap := &meta.Snapshot{}
	ref := partitionRef{name: "t"}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.produceAllowed(c, snap, ref, true)
	}
}
