package api

// DescribeLogDirs (key 35), v1–v4 as Kafka 4 serves (KIP-896 dropped v0):
// each log directory of this broker (log.dirs, as absolute paths), with
// the partitions it holds a replica of — each with its size in bytes, its
// offset lag (how far the log end is behind the high watermark, which for
// a log that is not a future log is 0, as Kafka computes it) and is_future
// (kbroker never moves a replica between directories, so false) — and, from
// v4 (KIP-827), the volume's total and usable bytes. A null topic list
// asks for every partition; partitions this broker holds no replica of are
// left out. CLUSTER DESCRIBE is needed, else the answer has no directories
// and CLUSTER_AUTHORIZATION_FAILED (v3+ has the top-level error code).

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/meta"
	"kbroker/internal/storage"
	"kbroker/internal/wire"
)

func init() {
	register(kmsg.DescribeLogDirs, 1, 4, handleDescribeLogDirs, clusterACL(auth.OpDescribe))
}

func handleDescribeLogDirs(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !s.clusterAllowed(c, kmsg.DescribeLogDirs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	snap := s.Store.Snapshot()
	dirs := make([]kmsg.DescribeLogDirsResponseDir, 0, len(s.Broker.LogDirs))
	index := map[string]int{}
	for _, d := range s.Broker.LogDirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			abs = d
		}
		if _, dup := index[abs]; dup {
			continue
		}
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = abs
		rd.TotalBytes, rd.UsableBytes = storage.DiskSpace(abs)
		index[abs] = len(dirs)
		dirs = append(dirs, rd)
	}
	add := func(t *meta.Topic, p int32) {
		if p < 0 || p >= t.Partitions || !s.Logs.IsReplica(snap, t, p) {
			return
		}
		l, err := s.Logs.Log(snap, t, p)
		if err != nil {
			return // the directory cannot be read: left out
		}
		parent, _ := filepath.Abs(filepath.Dir(l.Dir()))
		i, ok := index[parent]
		if !ok {
			return
		}
		rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		rp.Partition, rp.Size = p, l.Size()
		rp.OffsetLag = max(l.HighWatermark()-l.LogEndOffset(), 0)
		d := &dirs[i]
		if n := len(d.Topics); n == 0 || d.Topics[n-1].Topic != t.Name {
			rt := kmsg.NewDescribeLogDirsResponseDirTopic()
			rt.Topic = t.Name
			d.Topics = append(d.Topics, rt)
		}
		d.Topics[len(d.Topics)-1].Partitions = append(d.Topics[len(d.Topics)-1].Partitions, rp)
	}
	if req.Topics == nil {
		names := slices.Sorted(snap.TopicNames())
		for _, name := range names {
			t := snap.Topic(name)
			for p := int32(0); p < t.Partitions; p++ {
				add(t, p)
			}
		}
	} else {
		for _, rt := range req.Topics {
			t := snap.Topic(rt.Topic)
			if t == nil {
				continue
			}
			for _, p := range rt.Partitions {
				add(t, p)
			}
		}
	}
	resp.Dirs = dirs
	return resp, nil
}
