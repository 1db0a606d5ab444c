package api

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestREADMECompatibilityTable keeps README's API table equal to what the
// handlers register (and so to what ApiVersions advertises).
func TestREADMECompatibilityTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| (\d+) \| (\w+) \| (\d+)–(\d+) \|$`)
	documented := map[int16]string{}
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		key, _ := strconv.Atoi(m[1])
		documented[int16(key)] = fmt.Sprintf("%s %s–%s", m[2], m[3], m[4])
	}
	for key, d := range registry {
		want := fmt.Sprintf("%s %d–%d", kmsg.NameForKey(key), d.min, d.max)
		if got := documented[key]; !equalFoldName(got, want) {
			t.Errorf("README row for key %d = %q, handlers serve %q", key, got, want)
		}
		delete(documented, key)
	}
	for key, row := range documented {
		t.Errorf("README lists key %d (%s), which no handler serves", key, row)
	}
}

// equalFoldName compares ignoring the case of API names (kmsg spells
// InitProducerID, Kafka's docs InitProducerId).
func equalFoldName(a, b string) bool {
	return regexp.MustCompile(`(?i)^` + regexp.QuoteMeta(b) + `$`).MatchString(a)
}
