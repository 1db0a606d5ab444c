package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"kbroker/internal/config"
)

func readREADME(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section is README's text from the heading to the next one of its level.
func section(t *testing.T, readme, heading string) string {
	t.Helper()
	start := strings.Index(readme, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("README has no %q", heading)
	}
	rest := readme[start+len(heading)+2:]
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

func TestREADMEGoVersionIsGoMods(t *testing.T) {
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(string(gomod))
	got := regexp.MustCompile(`On a machine with Go (\S+) or later`).FindStringSubmatch(section(t, readREADME(t), "## Quick start"))
	if want == nil || got == nil || got[1] != want[1] {
		t.Fatalf("README's quick start names Go %v, go.mod's go line %v", got, want)
	}
}

// The quick start's promises about what its commands need and how the
// broker stops: go run passes no SIGTERM on, so it may only promise Ctrl-C.
func TestREADMEQuickStartSaysWhatItNeeds(t *testing.T) {
	qs := section(t, readREADME(t), "## Quick start")
	goRun := regexp.MustCompile(`(?m)^go run ./cmd/kbroker serve .*$`).FindString(qs)
	if !strings.Contains(goRun, "Ctrl-C stops it") || strings.Contains(goRun, "SIGTERM") {
		t.Errorf("the go run line %q must say Ctrl-C stops it, not SIGTERM", goRun)
	}
	prose := strings.Join(strings.Fields(qs), " ") // as read, whatever the line breaks
	for _, want := range []string{
		"kcat, which must be installed",
		"must run as root or be allowed to use sudo",
		"the npm registry",
		"go build -o kbroker ./cmd/kbroker",
		"a SIGTERM sent to `go run` ends the go command alone",
	} {
		if !strings.Contains(prose, want) {
			t.Errorf("the quick start does not say %q", want)
		}
	}
}

// The acls example works on a broker with the two lines README gives, and
// fails without them.
func TestREADMEACLExampleWorksWithTheLinesItGives(t *testing.T) {
	cli := section(t, readREADME(t), "## Admin CLI")
	example := regexp.MustCompile(`(?m)^kbroker acls +--bootstrap-server 127\.0\.0\.1:9092 (.*)$`).FindStringSubmatch(cli)
	block := regexp.MustCompile("(?s)The `acls` line needs a broker with an authorizer.*?```properties\n(.*?)```").FindStringSubmatch(cli)
	if example == nil || block == nil {
		t.Fatalf("README's Admin CLI section lacks the acls example or its server.properties lines")
	}
	props := config.Properties{}
	for _, line := range strings.Split(strings.TrimSpace(block[1]), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("README's properties line %q", line)
		}
		props[k] = v
	}
	if len(props) != 2 {
		t.Fatalf("README gives %d server.properties lines for the acls example, want 2: %v", len(props), props)
	}
	command := strings.Fields(example[1])

	r := kb(t, args(startBroker(t, nil), append([]string{"acls"}, command...)...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "SECURITY_DISABLED: No Authorizer is configured on the broker") {
		t.Fatalf("the acls example without an authorizer: %+v", r)
	}
	out := ok(t, args(startBroker(t, props), append([]string{"acls"}, command...)...)...)
	if !strings.Contains(out, "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`") {
		t.Fatalf("the acls example with README's lines:\n%s", out)
	}
}
