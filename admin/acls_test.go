package admin_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/admin"
)

func TestACLsCreateDescribeDelete(t *testing.T) {
	forEachTargetWith(t, withAuthorizer, func(t *testing.T, tg target, c *admin.Client) {
		skipUnlessAPI(t, c, int16(kmsg.CreateACLs), "CreateAcls")
		read := admin.ACLBinding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
		prefixed := read
		prefixed.ResourceName, prefixed.PatternType, prefixed.Operation = "logs-", kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLOperationWrite
		cluster := admin.ACLBinding{ResourceType: kmsg.ACLResourceTypeCluster, ResourceName: admin.ClusterName, PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:bob", Host: "*", Operation: kmsg.ACLOperationAlter, Permission: kmsg.ACLPermissionTypeDeny}
		rs, err := c.CreateACLs(ctxT(t), []admin.ACLBinding{read, prefixed, cluster})
		if err != nil {
			if errorsIs(err, kerr.SecurityDisabled) {
				t.Skipf("broker has no authorizer: %v", err)
			}
			t.Fatal(err)
		}
		if err := rs.All(); err != nil {
			if errorsIs(err, kerr.SecurityDisabled) {
				t.Skipf("broker has no authorizer: %v", err)
			}
			t.Fatal(err)
		}

		all, err := c.DescribeACLs(ctxT(t), admin.AnyACL())
		if err != nil || len(all) != 3 {
			t.Fatalf("DescribeACLs(any) = %v, %v", all, err)
		}
		if !tg.kfake { // kfake's MATCH needs the exact name
			f := admin.AnyACL()
			f.ResourceType, f.PatternType, f.ResourceName = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeMatch, kmsg.StringPtr("logs-app")
			match, err := c.DescribeACLs(ctxT(t), f)
			if err != nil || len(match) != 1 || match[0] != prefixed {
				t.Fatalf("DescribeACLs(match logs-app) = %v, %v", match, err)
			}
		}

		// An invalid binding fails alone (kfake does not validate CLUSTER names).
		if !tg.kfake {
			bad := cluster
			bad.ResourceName = "not-the-cluster"
			rs, err = c.CreateACLs(ctxT(t), []admin.ACLBinding{bad})
			if err != nil {
				t.Fatal(err)
			}
			wantCode(t, rs.All(), kerr.InvalidRequest)
		}

		del := admin.AnyACL()
		del.Principal = kmsg.StringPtr("User:alice")
		drs, err := c.DeleteACLs(ctxT(t), []admin.ACLFilter{del})
		if err != nil || drs.All() != nil || len(drs[0].Deleted) != 2 {
			t.Fatalf("DeleteACLs(alice) = %+v, %v", drs, err)
		}
		left, err := c.DescribeACLs(ctxT(t), admin.AnyACL())
		if err != nil || len(left) != 1 || left[0] != cluster {
			t.Fatalf("left after delete: %v, %v", left, err)
		}
		if got := cluster.String(); got != "ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL) (principal=User:bob, host=*, operation=ALTER, permissionType=DENY)" {
			t.Fatalf("String() = %s", got)
		}
	})
}
