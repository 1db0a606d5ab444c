package main

// kbroker configs --alter and the quota/SCRAM side of --describe.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/admin"
)

// quotaEntityType maps kafka-configs.sh's entity types to quota entity types.
var quotaEntityType = map[string]string{typeUsers: admin.EntityUser, typeClients: admin.EntityClientID, typeIPs: admin.EntityIP}

// describeQuotas answers --describe for users, clients and ips: the quota
// entities matching a strict filter (name → exact, default → default, type
// alone → any), then for users alone the SCRAM credentials.
func (c *configsCmd) describeQuotas(ctx context.Context, cl *admin.Client, ents []entity) ([]describedEntity, error) {
	filter := admin.QuotaFilter{Strict: true}
	for _, e := range ents {
		fc := admin.QuotaFilterComponent{EntityType: quotaEntityType[e.Type], Match: admin.MatchAny}
		switch {
		case e.isDefault():
			fc.Match = admin.MatchDefault
		case e.named:
			fc.Match, fc.Name = admin.MatchExact, *e.Name
		}
		filter.Components = append(filter.Components, fc)
	}
	entries, err := cl.DescribeClientQuotas(ctx, filter)
	if err != nil {
		return nil, err
	}
	var out []describedEntity
	for _, q := range entries {
		d := describedEntity{}
		for _, comp := range q.Entity {
			d.Entity = append(d.Entity, entity{Type: cliEntityType(comp.Type), Name: comp.Name, named: true})
		}
		d.Configs = quotaEntries(q.Values)
		out = append(out, d)
	}
	// Kafka describes SCRAM credentials for users only, never for defaults.
	if len(ents) == 1 && ents[0].Type == typeUsers && !ents[0].isDefault() {
		scram, err := c.describeScram(ctx, cl, ents[0])
		if err != nil {
			return nil, err
		}
		out = append(out, scram...)
	}
	return out, nil
}

func cliEntityType(quotaType string) string {
	for cli, q := range quotaEntityType {
		if q == quotaType {
			return cli
		}
	}
	return quotaType
}

func quotaEntries(values map[string]float64) []admin.ConfigEntry {
	out := []admin.ConfigEntry{}
	for k, v := range values {
		s := javaDouble(v)
		out = append(out, admin.ConfigEntry{Name: k, Value: &s, Type: admin.TypeDouble})
	}
	sortEntries(out)
	return out
}

func (c *configsCmd) describeScram(ctx context.Context, cl *admin.Client, e entity) ([]describedEntity, error) {
	if ok, err := cl.Supports(ctx, int16(kmsg.DescribeUserSCRAMCredentials)); err != nil || !ok {
		return nil, err // a broker without SCRAM APIs: quotas only
	}
	var users []string
	if e.Name != nil {
		users = []string{*e.Name}
	}
	creds, err := cl.DescribeUserScramCredentials(ctx, users...)
	if err != nil {
		return nil, err
	}
	var out []describedEntity
	for _, u := range creds {
		name := u.User
		d := describedEntity{Entity: []entity{{Type: typeUsers, Name: &name, named: true}}, Configs: []admin.ConfigEntry{}}
		switch {
		case errors.Is(u.Err, kerr.ResourceNotFound):
			continue // no credentials: nothing to show, as Kafka
		case u.Err != nil:
			d.Error = fmt.Sprintf("retrieving SCRAM credential configs for user-principal '%s': %v", u.User, u.Err)
		}
		d.ScramCredentials = u.Credentials
		out = append(out, d)
	}
	return out, nil
}

// javaDouble formats as Java's Double.toString, which kafka-configs.sh
// prints: 1024.0, 1.048576E7, 1.0E-4.
func javaDouble(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case math.IsNaN(v):
		return "NaN"
	case v == 0:
		return "0.0"
	}
	if a := math.Abs(v); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'E', -1, 64) // 1.048576E+07
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	n, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(n)
}

func (c *configsCmd) runAlter(ctx context.Context, cl *admin.Client, ents []entity) error {
	if c.addConfig != "" && c.addConfigFile != "" {
		return usageError("only one of --add-config and --add-config-file may be given")
	}
	var adds configAdds
	if c.addConfigFile != "" {
		if err := loadAddConfigFile(c.addConfigFile, ents, &adds, c.warn); err != nil {
			return err
		}
	}
	if c.addConfig != "" {
		if err := parseAddConfig(c.addConfig, &adds); err != nil {
			return err
		}
	}
	deletes := parseDeleteConfig(c.deleteConf)
	if len(adds.keys) == 0 && len(deletes) == 0 && c.addConfigFile == "" {
		return usageError("--alter needs --add-config, --add-config-file or --delete-config")
	}
	var err error
	switch ents[0].Type {
	case typeTopics, typeBrokers, typeBrokerLoggers, typeGroups:
		err = c.alterResource(ctx, cl, ents[0], adds, deletes)
	default:
		err = c.alterQuotaEntity(ctx, cl, ents, adds, deletes)
	}
	if err != nil {
		if rule, msg, ok := explainPolicy(err); ok && c.dryRun {
			fmt.Fprintf(c.out, "Dry run: rejected by policy rule %s: %s\n", rule, msg)
		}
		return err
	}
	if c.dryRun {
		fmt.Fprintln(c.out, "Dry run: the change is valid and allowed by the policies; nothing was changed.")
		return nil
	}
	if e := ents[0]; e.Name != nil {
		fmt.Fprintf(c.out, "Completed updating config for %s %s.\n", singular(e.Type), *e.Name)
	} else {
		fmt.Fprintf(c.out, "Completed updating default config for %s in the cluster.\n", e.Type)
	}
	return nil
}

// alterResource changes a topic, broker (or the default), broker logger or group
// with IncrementalAlterConfigs, after checking, as kafka-configs.sh does,
// that every key to delete is currently set there.
func (c *configsCmd) alterResource(ctx context.Context, cl *admin.Client, e entity, adds configAdds, deletes []string) error {
	res := admin.ConfigResource{Type: resourceTypeOf[e.Type], Name: e.nameOr("")}
	current, err := cl.DescribeConfigs(ctx, []admin.ConfigResource{res}, admin.DescribeOptions{})
	if err != nil {
		return err
	}
	if current[0].Err != nil {
		return current[0].Err
	}
	set := map[string]bool{}
	for _, ce := range filterEntries(current[0].Entries, dynamicSource([]entity{e}), false) {
		set[ce.Name] = true
	}
	if e.Type == typeBrokerLoggers {
		var unknown []string
		for _, k := range append(append([]string{}, adds.keys...), deletes...) {
			if !set[k] {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			return fmt.Errorf("Invalid broker logger(s): %s", strings.Join(unknown, ","))
		}
	} else if err := checkDeletes(deletes, set); err != nil {
		return err
	}
	var changes []admin.ConfigChange
	for _, k := range adds.keys {
		changes = append(changes, admin.Set(k, adds.values[k]))
	}
	for _, k := range deletes {
		changes = append(changes, admin.Delete(k))
	}
	if len(changes) == 0 {
		return nil
	}
	rs, err := cl.AlterConfigs(ctx, map[admin.ConfigResource][]admin.ConfigChange{res: changes}, admin.AlterOptions{Incremental: true, ValidateOnly: c.dryRun})
	if err != nil {
		return err
	}
	return rs.All()
}

func checkDeletes(deletes []string, set map[string]bool) error {
	var invalid []string
	for _, k := range deletes {
		if !set[k] {
			invalid = append(invalid, k)
		}
	}
	if len(invalid) > 0 {
		return fmt.Errorf("Invalid config(s): %s", strings.Join(invalid, ","))
	}
	return nil
}

func isScramKey(k string) bool { return k == "SCRAM-SHA-256" || k == "SCRAM-SHA-512" }

// alterQuotaEntity changes quotas of users, clients, (user, client-id)
// pairs or ips, or a user's SCRAM credentials; the two kinds cannot be
// mixed in one command, as in Kafka.
func (c *configsCmd) alterQuotaEntity(ctx context.Context, cl *admin.Client, ents []entity, adds configAdds, deletes []string) error {
	scram, quota := 0, 0
	for _, k := range append(append([]string{}, adds.keys...), deletes...) {
		if isScramKey(k) {
			scram++
		} else {
			quota++
		}
	}
	if scram > 0 && quota > 0 {
		return usageError("SCRAM credentials and quotas cannot be altered in one command")
	}
	if scram > 0 && c.dryRun {
		return usageError("--dry-run does not apply to SCRAM credentials (AlterUserScramCredentials has no validate-only mode)")
	}
	if scram > 0 {
		if len(ents) != 1 || ents[0].Type != typeUsers || ents[0].Name == nil {
			return usageError("SCRAM credentials can only be altered for one named user (--entity-type users --entity-name <user>)")
		}
		return alterScram(ctx, cl, *ents[0].Name, adds, deletes)
	}
	var entity admin.QuotaEntity
	filter := admin.QuotaFilter{Strict: true}
	for _, e := range ents {
		comp := admin.QuotaComponent{Type: quotaEntityType[e.Type], Name: e.Name}
		entity = append(entity, comp)
		fc := admin.QuotaFilterComponent{EntityType: comp.Type, Match: admin.MatchDefault}
		if e.Name != nil {
			fc.Match, fc.Name = admin.MatchExact, *e.Name
		}
		filter.Components = append(filter.Components, fc)
	}
	if len(deletes) > 0 {
		current, err := cl.DescribeClientQuotas(ctx, filter)
		if err != nil {
			return err
		}
		set := map[string]bool{}
		for _, q := range current {
			if q.Entity.Equal(entity) {
				for k := range q.Values {
					set[k] = true
				}
			}
		}
		if err := checkDeletes(deletes, set); err != nil {
			return err
		}
	}
	alt := admin.QuotaAlteration{Entity: entity}
	for _, k := range adds.keys {
		v, err := strconv.ParseFloat(strings.TrimSpace(adds.values[k]), 64)
		if err != nil {
			return fmt.Errorf("Cannot parse quota configuration value for %s: %s", k, adds.values[k])
		}
		alt.Ops = append(alt.Ops, admin.QuotaOp{Key: k, Value: v})
	}
	for _, k := range deletes {
		alt.Ops = append(alt.Ops, admin.QuotaOp{Key: k, Remove: true})
	}
	rs, err := cl.AlterClientQuotas(ctx, []admin.QuotaAlteration{alt}, c.dryRun)
	if err != nil {
		return err
	}
	return rs.All()
}

// alterScram upserts SCRAM-SHA-*=[iterations=N,password=P] and deletes
// the listed mechanisms of one user.
func alterScram(ctx context.Context, cl *admin.Client, user string, adds configAdds, deletes []string) error {
	var ups []admin.ScramUpsertion
	for _, k := range adds.keys {
		mech, _ := admin.ParseScramMechanism(k)
		up := admin.ScramUpsertion{User: user, Mechanism: mech, Iterations: admin.DefaultScramIterations}
		for _, kv := range strings.Split(adds.values[k], ",") {
			name, val, _ := strings.Cut(kv, "=")
			switch strings.TrimSpace(name) {
			case "iterations":
				n, err := strconv.Atoi(strings.TrimSpace(val))
				if err != nil {
					return fmt.Errorf("%s: iterations %q is not a number", k, val)
				}
				up.Iterations = int32(n)
			case "password":
				up.Password = val
			default:
				return fmt.Errorf("%s: unknown field %q (want iterations=<n>,password=<p>)", k, name)
			}
		}
		if up.Password == "" {
			return fmt.Errorf("%s: password is required: %s=[iterations=8192,password=<p>]", k, k)
		}
		if up.Iterations < admin.MinScramIterations {
			return fmt.Errorf("%s: iterations=%d is below the minimum %d", k, up.Iterations, admin.MinScramIterations)
		}
		ups = append(ups, up)
	}
	var dels []admin.ScramDeletion
	for _, k := range deletes {
		mech, _ := admin.ParseScramMechanism(k)
		dels = append(dels, admin.ScramDeletion{User: user, Mechanism: mech})
	}
	rs, err := cl.AlterUserScramCredentials(ctx, ups, dels)
	if err != nil {
		return err
	}
	return rs.All()
}
