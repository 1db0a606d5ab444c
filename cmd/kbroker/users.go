package main

// kbroker users: SCRAM credentials (DescribeUserScramCredentials,
// AlterUserScramCredentials). Apache Kafka manages them with
// kafka-configs.sh --entity-type users (which kbroker configs also
// accepts); this command is the shorter path, and reads the password from
// a file or stdin so it stays out of shell history and ps.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"kbroker/admin"
)

const usersSynopsis = `kbroker users --bootstrap-server host:port [--command-config file]
         (--describe [--user u …] [--format text|json]
          | --upsert --user u [--mechanism SCRAM-SHA-256|SCRAM-SHA-512] [--iterations n] (--password p | --password-file f)
          | --delete --user u [--mechanism m])`

const usersExamples = `  kbroker users --bootstrap-server localhost:9092 --describe
  echo -n 'alice-secret' | kbroker users --bootstrap-server localhost:9092 --upsert --user alice --mechanism SCRAM-SHA-512 --iterations 8192 --password-file -
  kbroker users --bootstrap-server localhost:9092 --delete --user alice --mechanism SCRAM-SHA-512

  # the same with kafka-configs.sh's syntax
  kbroker configs --bootstrap-server localhost:9092 --alter --entity-type users --entity-name alice \
      --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
`

type usersCmd struct {
	conn                     connFlags
	describe, upsert, delete bool
	users                    stringList
	mechanism                string
	iterations               int
	password, passwordFile   string
	format                   *formatFlag
	out, errOut              io.Writer
	stdin                    io.Reader
}

func runUsers(args []string, out, errOut io.Writer) error {
	c := &usersCmd{out: out, errOut: errOut, stdin: os.Stdin}
	fs := newFlagSet("users", usersSynopsis, usersExamples, out)
	c.conn.register(fs)
	fs.BoolVar(&c.describe, "describe", false, "list SCRAM credentials (mechanisms and iterations, never secrets)")
	fs.BoolVar(&c.upsert, "upsert", false, "create or replace a user's credential")
	fs.BoolVar(&c.delete, "delete", false, "delete a user's credential(s)")
	fs.Var(&c.users, "user", "user `name` (repeatable with --describe)")
	fs.StringVar(&c.mechanism, "mechanism", "", "`mechanism` SCRAM-SHA-256 or SCRAM-SHA-512 (--upsert default SCRAM-SHA-256; --delete default both)")
	fs.IntVar(&c.iterations, "iterations", admin.DefaultScramIterations, "PBKDF2 `iterations` (4096–16384)")
	fs.StringVar(&c.password, "password", "", "the `password` (visible in ps; prefer --password-file)")
	fs.StringVar(&c.passwordFile, "password-file", "", "`file` whose first line is the password; - for stdin")
	c.format = registerFormat(fs)
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	action, err := exactlyOne(map[string]bool{"describe": c.describe, "upsert": c.upsert, "delete": c.delete})
	if err != nil {
		return err
	}
	if action != "describe" && len(c.users) != 1 {
		return usagef("--%s needs exactly one --user", action)
	}
	var mechs []admin.ScramMechanism
	if c.mechanism != "" {
		m, err := admin.ParseScramMechanism(c.mechanism)
		if err != nil {
			return usageError(err.Error())
		}
		mechs = []admin.ScramMechanism{m}
	}
	var pw string
	if action == "upsert" {
		if pw, err = c.readPassword(); err != nil {
			return err
		}
		if len(mechs) == 0 {
			mechs = []admin.ScramMechanism{admin.ScramSHA256}
		}
	}
	cl, ctx, done, err := c.conn.connect()
	if err != nil {
		return err
	}
	defer done()
	switch action {
	case "describe":
		return c.runDescribe(ctx, cl)
	case "upsert":
		rs, err := cl.AlterUserScramCredentials(ctx, []admin.ScramUpsertion{{User: c.users[0], Mechanism: mechs[0],
			Iterations: int32(c.iterations), Password: pw}}, nil)
		return c.report(rs, err, "Completed updating SCRAM credential %s for user %s.\n", mechs[0])
	}
	return c.runDelete(ctx, cl, mechs)
}

func (c *usersCmd) readPassword() (string, error) {
	switch {
	case c.password != "" && c.passwordFile != "":
		return "", usageError("only one of --password and --password-file may be given")
	case c.password != "":
		return c.password, nil
	case c.passwordFile == "":
		return "", usageError("--upsert needs --password or --password-file")
	}
	r := c.stdin
	if c.passwordFile != "-" {
		f, err := os.Open(c.passwordFile)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", fmt.Errorf("--password-file %s: empty password", c.passwordFile)
	}
	return pw, nil
}

func (c *usersCmd) report(rs admin.ScramResults, err error, format string, mech admin.ScramMechanism) error {
	if err != nil {
		return err
	}
	if err := rs.All(); err != nil {
		return err
	}
	fmt.Fprintf(c.out, format, mech, c.users[0])
	return nil
}

func (c *usersCmd) runDescribe(ctx context.Context, cl *admin.Client) error {
	creds, err := cl.DescribeUserScramCredentials(ctx, c.users...)
	if err != nil {
		return err
	}
	if *c.format == "json" {
		if creds == nil {
			creds = []admin.UserScramCredentials{}
		}
		if err := writeJSON(c.out, creds); err != nil {
			return err
		}
	}
	failed := false
	for _, u := range creds {
		if u.Err != nil {
			fmt.Fprintf(c.errOut, "%s%v\n", errorPrefix("users"), u.Err)
			failed = true
			continue
		}
		if *c.format == "json" {
			continue
		}
		parts := make([]string, len(u.Credentials))
		for i, ci := range u.Credentials {
			parts[i] = fmt.Sprintf("%s=iterations=%d", ci.Mechanism, ci.Iterations)
		}
		fmt.Fprintf(c.out, "SCRAM credential configs for user-principal '%s' are %s\n", u.User, strings.Join(parts, ", "))
	}
	if failed {
		return errReported
	}
	return nil
}

// runDelete deletes the named mechanism, or every mechanism the user has.
func (c *usersCmd) runDelete(ctx context.Context, cl *admin.Client, mechs []admin.ScramMechanism) error {
	user := c.users[0]
	if len(mechs) == 0 {
		creds, err := cl.DescribeUserScramCredentials(ctx, user)
		if err != nil {
			return err
		}
		for _, u := range creds {
			if u.Err != nil {
				return u.Err
			}
			for _, ci := range u.Credentials {
				mechs = append(mechs, ci.Mechanism)
			}
		}
	}
	for _, m := range mechs {
		rs, err := cl.AlterUserScramCredentials(ctx, nil, []admin.ScramDeletion{{User: user, Mechanism: m}})
		if err := c.report(rs, err, "Deleted SCRAM credential %s of user %s.\n", m); err != nil {
			return err
		}
	}
	return nil
}
