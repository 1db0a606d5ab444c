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
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/meta"
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
	snap := s.Store.Snapshot()
	if len(req.Users) == 0 {
		for _, user := range slices.Sorted(maps.Keys(snap.ScramCredentials())) {
			resp.Results = append(resp.Results, scramResult(snap, user))
		}
		return resp, nil
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	for _, u := range req.Users {
		var err error
		switch {
		case count[u.Name] > 1:
			err = newError(kerr.DuplicateResource, fmt.Sprintf("Cannot describe SCRAM credentials for the same user twice in a single request: %s", u.Name))
		case len(snap.ScramCredentials()[u.Name]) == 0:
			err = newError(kerr.ResourceNotFound, fmt.Sprintf("Attempt to describe a user credential that does not exist: %s", u.Name))
		}
		if err != nil {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.User = u.Name
			res.ErrorCode, res.ErrorMessage = errorCode(err)
			resp.Results = append(resp.Results, res)
			continue
		}
		resp.Results = append(resp.Results, scramResult(snap, u.Name))
	}
	return resp, nil
}

func scramResult(snap *meta.Snapshot, user string) kmsg.DescribeUserSCRAMCredentialsResponseResult {
	res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
	res.User = user
	for _, mech := range auth.ScramMechanisms() {
		if cred, ok := snap.ScramCredentials()[user][mech]; ok {
			info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			info.Mechanism, info.Iterations = auth.MechanismCode(mech), int32(cred.Iterations)
			res.CredentialInfos = append(res.CredentialInfos, info)
		}
	}
	return res
}
