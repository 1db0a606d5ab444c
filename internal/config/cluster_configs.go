package config

// clusterDefs are the metadata-store settings. With metadata.etcd.endpoints
// unset the broker keeps its metadata in a bbolt file in its first log
// directory and is a cluster of one; with it set, every broker of the
// cluster shares its metadata through that etcd (internal/meta/etcd.go,
// internal/cluster).
func clusterDefs() []*Def {
	return []*Def{
		{Name: "metadata.etcd.endpoints", Type: TypeList, Default: "", Mode: ReadOnly,
			Doc: "Comma-separated etcd client URLs (http://host:2379, or https:// with the metadata.etcd.ssl.* settings). Set: the broker joins the cluster whose metadata lives there; empty: single broker with a local bbolt store."},
		{Name: "metadata.etcd.prefix", Type: TypeString, Default: "/kbroker/", Mode: ReadOnly,
			Doc: "etcd key prefix under which this cluster keeps everything, so several clusters can share one etcd."},
		{Name: "metadata.etcd.username", Type: TypeString, NoDefault: true, Mode: ReadOnly,
			Doc: "etcd user (etcd's own authentication); unset: no authentication."},
		{Name: "metadata.etcd.password", Type: TypePassword, NoDefault: true, Mode: ReadOnly,
			Doc: "Password of metadata.etcd.username."},
		{Name: "metadata.etcd.ssl.ca.location", Type: TypeString, NoDefault: true, Mode: ReadOnly,
			Doc: "PEM file of the CA certificates that etcd's server certificate must chain to (etcdctl --cacert). Setting any metadata.etcd.ssl.* key turns TLS on."},
		{Name: "metadata.etcd.ssl.certificate.location", Type: TypeString, NoDefault: true, Mode: ReadOnly,
			Doc: "PEM file of the client certificate chain the broker presents to etcd (etcdctl --cert), for etcd's --client-cert-auth."},
		{Name: "metadata.etcd.ssl.key.location", Type: TypeString, NoDefault: true, Mode: ReadOnly,
			Doc: "PEM file of the private key of metadata.etcd.ssl.certificate.location (etcdctl --key)."},
		{Name: "metadata.etcd.session.timeout.ms", Type: TypeLong, Default: "10000", Check: atLeast(1000), Mode: ReadOnly,
			Doc: "TTL of the etcd lease a broker registers under (rounded up to whole seconds): a broker that cannot reach etcd for this long is no longer listed as live, and re-registers when etcd answers again."},
		{Name: "metadata.etcd.request.timeout.ms", Type: TypeLong, Default: "5000", Check: atLeast(1), Mode: ReadOnly,
			Doc: "How long one etcd call may take before the admin request that needs it fails with a retriable error (REQUEST_TIMED_OUT)."},
		{Name: "metadata.etcd.max.txn.ops", Type: TypeInt, Default: "128", Check: atLeast(2), Mode: ReadOnly,
			Doc: "etcd's --max-txn-ops (etcd's default: 128): large CreateTopics, AlterClientQuotas, CreateAcls and DeleteAcls requests are committed in transactions of at most this many reads and writes. At least 2 (a topic and its configs go in one transaction)."},
		{Name: "metadata.etcd.max.request.bytes", Type: TypeInt, Default: "1572864", Check: atLeast(4096), Mode: ReadOnly,
			Doc: "etcd's --max-request-bytes (etcd's default: 1.5 MiB): large admin requests are committed in transactions of at most this many bytes of keys and values, and one item (a topic with its configs, a quota entity, an ACL's resource) larger than that fails alone."},
	}
}
