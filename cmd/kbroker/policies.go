package main

// kbroker policies: try CEL policy rules before they are deployed.

import (
	"fmt"
	"io"
	"os"
	"strings"

	"kbroker/admin"
	"kbroker/internal/celpolicy"
	"kbroker/internal/config"
)

const policiesSynopsis = `kbroker policies --check FILE [--request JSON | --requests FILE]
       kbroker policies --bootstrap-server host:port (--apply FILE | --remove)

--apply stores a rule file in the cluster's metadata store (the cluster-wide
config kbroker.policy.rules); every broker puts it in effect, except a
broker with kbroker.policy.file set, whose file takes precedence. A file
that does not compile is refused. --remove deletes the stored rule set.

Compiles a policy rule file (kbroker.policy.file) and, given sample
requests, evaluates every rule on each one and prints allow, deny or skip
(the rule's match did not hold) per rule. A sample is what a rule sees of
one resource, in JSON: operation (alter-configs, create-topic,
create-partitions, alter-client-quotas), principal, client, listener,
resource {type, name}, changes (config values are strings, null for a
deletion), configs, topic {name, partitions, replication_factor,
current_partitions, assignments}, entity, quotas, and optionally expect
(allow or deny). --requests reads a JSON list or JSON lines.

Exits 0 when the file compiles and every sample got what it expects, 1
otherwise (the compile error names the file, the line and the rule).`

const policiesExamples = `  kbroker policies --check policies.yaml
  kbroker policies --check policies.yaml --request '{"operation":"alter-configs","principal":"User:alice","resource":{"type":"topic","name":"orders"},"changes":{"retention.ms":"60000"},"expect":"deny"}'
  kbroker policies --check policies.yaml --requests samples.json`

func runPolicies(args []string, out, _ io.Writer) error {
	fs := newFlagSet("policies", policiesSynopsis, policiesExamples, out)
	var conn connFlags
	conn.register(fs)
	check := fs.String("check", "", "`file` of rules to compile (and evaluate against the samples)")
	request := fs.String("request", "", "one sample request, as `JSON`")
	requests := fs.String("requests", "", "`file` of sample requests (a JSON list or JSON lines)")
	apply := fs.String("apply", "", "`file` of rules to store in the cluster")
	remove := fs.Bool("remove", false, "delete the rule set stored in the cluster")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	if _, err := exactlyOne(map[string]bool{"check": *check != "", "apply": *apply != "", "remove": *remove}); err != nil {
		return err
	}
	if *apply != "" || *remove {
		return storePolicies(&conn, *apply, out)
	}
	if *request != "" && *requests != "" {
		return usageError("only one of --request and --requests may be given")
	}
	set, err := celpolicy.LoadFile(*check)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: %d rules compile.\n", *check, len(set.Rules))
	var data []byte
	switch {
	case *request != "":
		data = []byte(*request)
	case *requests != "":
		if data, err = os.ReadFile(*requests); err != nil {
			return err
		}
	default:
		return nil
	}
	samples, err := celpolicy.ParseSamples(data)
	if err != nil {
		return err
	}
	failed := false
	for i, s := range samples {
		vars := s.Vars()
		fmt.Fprintf(out, "\nrequest %d: %s %s %s by %s\n", i+1, s.Operation, vars.ResourceType, vars.ResourceName, vars.Principal)
		verdict := "allow"
		for _, r := range set.For(s.Operation) {
			matched, v := r.Check(vars)
			switch {
			case v != nil:
				fmt.Fprintf(out, "  deny   %s: %s\n", r.Name, v.Message)
				verdict = "deny"
			case !matched:
				fmt.Fprintf(out, "  skip   %s (match is false)\n", r.Name)
			default:
				fmt.Fprintf(out, "  allow  %s\n", r.Name)
			}
		}
		line := "  => " + verdict
		if s.Expect != "" && s.Expect != verdict {
			line += fmt.Sprintf(" (expected %s)", s.Expect)
			failed = true
		}
		fmt.Fprintln(out, line)
	}
	if failed {
		fmt.Fprintln(out, "\nSome samples did not get what they expect.")
		return errReported
	}
	return nil
}

// storePolicies stores the rule file at path in the cluster (path "":
// removes the stored set), once it compiles here.
func storePolicies(conn *connFlags, path string, out io.Writer) error {
	change := admin.Delete(config.StoredPolicySource)
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		set, err := celpolicy.Compile(path, data)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: %d rules compile.\n", path, len(set.Rules))
		change = admin.Set(config.StoredPolicySource, string(data))
	}
	cl, ctx, done, err := conn.connect()
	if err != nil {
		return err
	}
	defer done()
	res := admin.ConfigResource{Type: admin.ResourceBroker, Name: ""}
	rs, err := cl.AlterConfigs(ctx, map[admin.ConfigResource][]admin.ConfigChange{res: {change}}, admin.AlterOptions{Incremental: true})
	if err != nil {
		return err
	}
	if err := rs.All(); err != nil {
		return err
	}
	if path == "" {
		fmt.Fprintln(out, "Removed the cluster's stored policy rules.")
	} else {
		fmt.Fprintln(out, "Stored the policy rules in the cluster; every broker without kbroker.policy.file uses them.")
	}
	return nil
}

// explainPolicy names the policy rule that rejected err, when a kbroker
// rule did: the broker puts the rule's name after its message.
func explainPolicy(err error) (rule, message string, ok bool) {
	if err == nil {
		return "", "", false
	}
	msg := err.Error()
	i := strings.LastIndex(msg, celpolicy.ViolationSuffix)
	if i < 0 || !strings.HasSuffix(msg, ")") {
		return "", "", false
	}
	rule = msg[i+len(celpolicy.ViolationSuffix) : len(msg)-1]
	message = msg[:i]
	// The admin client puts the resource and the error's name before the
	// broker's message.
	const code = "POLICY_VIOLATION: "
	if j := strings.Index(message, code); j >= 0 {
		message = message[j+len(code):]
	}
	return rule, message, true
}
