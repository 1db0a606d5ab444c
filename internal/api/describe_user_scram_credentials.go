package api

// DescribeUserScramCredentials (key 50), v0 (KIP-554).
//
// Lists, per user, the SCRAM mechanisms that have a credential and their
// iteration counts, never salts or keys. A null or empty user list means
// every user with a credential. A named user without any credential gets
// RESOURCE_NOT_FOUND, a user named twice DUPLICATE_RESOURCE (for every
// mention). Needs DESCRIBE on the cluster (top-level
// CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/wire"
)

func init() {
	register(kmsg.DescribeUserSCRAMCredentials, 0, 0, handleDescribeUserSCRAMCredentials, catchesUp(), clusterACL(auth.OpDescribe))
}

func handleDescribeUserSCRAMCredentials(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !s.clusterAllowed(c, kmsg.DescribeUserSCRAMCredentials) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(errClusterAuth)
		return resp, nil
	}
	users := make([]string, 0, len(req.Users))
	for _, u := range req.Users {
		users = append(users, u.Name)
	}
	for _, d := range s.scram.Describe(users) {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = d.User
		res.ErrorCode, res.ErrorMessage = errorCode(d.Err)
		for _, m := range d.Mechanisms {
			info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			info.Mechanism, info.Iterations = m.Code, int32(m.Iterations)
			res.CredentialInfos = append(res.CredentialInfos, info)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
