package admin_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/admin"
)

func TestScramCredentialsUpsertDescribeDelete(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target, c *admin.Client) {
		skipUnlessAPI(t, c, int16(kmsg.AlterUserSCRAMCredentials), "AlterUserScramCredentials")
		rs, err := c.AlterUserScramCredentials(ctxT(t), []admin.ScramUpsertion{
			{User: "alice", Mechanism: admin.ScramSHA256, Iterations: 8192, Password: "secret"},
			{User: "bob", Mechanism: admin.ScramSHA512, Password: "pw"},
		}, nil)
		if err != nil || rs.All() != nil {
			t.Fatal(err, rs.All())
		}
		us, err := c.DescribeUserScramCredentials(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if len(us) != 2 || us[0].User != "alice" || len(us[0].Credentials) != 1 ||
			us[0].Credentials[0] != (admin.ScramCredentialInfo{Mechanism: admin.ScramSHA256, Iterations: 8192}) ||
			us[1].Credentials[0] != (admin.ScramCredentialInfo{Mechanism: admin.ScramSHA512, Iterations: admin.DefaultScramIterations}) {
			t.Fatalf("described %+v", us)
		}
		rs, err = c.AlterUserScramCredentials(ctxT(t), []admin.ScramUpsertion{
			{User: "carol", Mechanism: admin.ScramSHA256, Iterations: 100, Password: "x"},
		}, []admin.ScramDeletion{{User: "alice", Mechanism: admin.ScramSHA256}})
		if err != nil {
			t.Fatal(err)
		}
		if rs[0].Err != nil {
			t.Fatalf("deleting alice: %v", rs[0].Err)
		}
		wantCode(t, rs[1].Err, kerr.UnacceptableCredential)
		us, err = c.DescribeUserScramCredentials(ctxT(t), "alice")
		if err != nil {
			t.Fatal(err)
		}
		if len(us) != 1 {
			t.Fatalf("describe alice: %+v", us)
		}
		wantCode(t, us[0].Err, kerr.ResourceNotFound)
	})
}
