package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// BootstrapUser is one SCRAM credential to create at startup.
type BootstrapUser struct {
	Name       string
	Credential Credential
}

// ParseScramBootstrap reads kbroker.scram.bootstrap.users: entries in
// kafka-storage format --add-scram syntax, separated by ';':
//
//	SCRAM-SHA-256=[name=admin,password=secret]
//	SCRAM-SHA-512=[name=alice,iterations=8192,password="a,b"]
//	SCRAM-SHA-256=[name=bob,salt="<base64>",saltedpassword="<base64>",iterations=4096]
//
// Values may be double-quoted (to hold ',' ']' or ';'). Iterations default
// to 4096. Errors never quote a password.
func ParseScramBootstrap(v string) ([]BootstrapUser, error) {
	var out []BootstrapUser
	for _, entry := range splitOutsideQuotes(v, ';') {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		mech, rest, ok := strings.Cut(entry, "=")
		mech = strings.TrimSpace(mech)
		rest = strings.TrimSpace(rest)
		if !ok || !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
			return nil, fmt.Errorf("SCRAM bootstrap entry for %s: want MECHANISM=[name=...,password=...]", mech)
		}
		if MechanismCode(mech) == 0 {
			return nil, fmt.Errorf("SCRAM bootstrap: %w %s", ErrUnknownScramMechanism, mech)
		}
		fields := map[string]string{}
		for _, kv := range splitOutsideQuotes(rest[1:len(rest)-1], ',') {
			k, val, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, errors.New("SCRAM bootstrap: fields must be key=value")
			}
			k = strings.ToLower(strings.TrimSpace(k))
			val = strings.TrimSpace(val)
			if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
				val = val[1 : len(val)-1]
			}
			fields[k] = val
		}
		u, err := bootstrapCredential(mech, fields)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func bootstrapCredential(mech string, f map[string]string) (BootstrapUser, error) {
	name := f["name"]
	if name == "" {
		return BootstrapUser{}, fmt.Errorf("SCRAM bootstrap entry for %s: %w", mech, ErrEmptyUsername)
	}
	iterations := DefaultIterations
	if s, ok := f["iterations"]; ok {
		n, err := strconv.Atoi(s)
		if err != nil {
			return BootstrapUser{}, fmt.Errorf("SCRAM bootstrap user %s: bad iterations %q", name, s)
		}
		iterations = n
	}
	var cred Credential
	var err error
	switch {
	case f["password"] != "":
		cred, err = NewCredential(mech, f["password"], iterations)
	case f["salt"] != "" && f["saltedpassword"] != "":
		salt, err1 := base64.StdEncoding.DecodeString(f["salt"])
		salted, err2 := base64.StdEncoding.DecodeString(f["saltedpassword"])
		if err1 != nil || err2 != nil {
			return BootstrapUser{}, fmt.Errorf("SCRAM bootstrap user %s: salt and saltedpassword must be base64", name)
		}
		cred, err = FromSaltedPassword(mech, salt, salted, iterations)
	default:
		return BootstrapUser{}, fmt.Errorf("SCRAM bootstrap user %s: needs password, or salt and saltedpassword", name)
	}
	if err != nil {
		return BootstrapUser{}, fmt.Errorf("SCRAM bootstrap user %s: %w", name, err)
	}
	return BootstrapUser{Name: name, Credential: cred}, nil
}

// splitOutsideQuotes splits s on sep where sep is not inside double quotes.
func splitOutsideQuotes(s string, sep byte) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted
		case sep:
			if !quoted {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
