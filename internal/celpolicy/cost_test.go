package celpolicy

import (
	"strings"
	"testing"
	"time"
)

// A rule whose evaluation would run away (ten million iterations of nested
// comprehensions) is interrupted after loopBudget and rejects, instead of
// holding the request it applies to.
func TestRunawayRuleIsInterrupted(t *testing.T) {
	const ten = "[0,1,2,3,4,5,6,7,8,9]"
	expr := "changes.size() >= 0" // reads the request: nothing to fold at compile time
	for i := range 7 {
		expr = ten + ".all(v" + string(rune('a'+i)) + ", " + expr + ")"
	}
	began := time.Now()
	set, err := Compile("cost.yaml", []byte("- name: runaway\n  on: alter-configs\n  validate: '"+expr+"'\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = engineWith(t, set).ValidateAlterConfig(topicAlter("t", "User:a", map[string]*string{"segment.ms": ptr("1")}, nil))
	if violation(t, err) != "runaway" || !strings.Contains(err.Error(), "could not be evaluated") {
		t.Fatalf("%v", err)
	}
	// Compiling does not run the loops either (constant folding skips
	// expressions with comprehensions).
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("compiling and evaluating the runaway rule took %v", took)
	}
}
