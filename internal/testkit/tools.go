package testkit

import (
	"os"
	"os/exec"
	"testing"
)

// KcatPath finds kcat. Locally a missing kcat skips the test; in CI (CI
// set) it fails it, since scripts/test installs it.
func KcatPath(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("kcat not installed (apt-get install kcat); set CI=1 to make this a failure")
		}
		t.Fatalf("kcat not found under CI: %v", err)
	}
	return path
}
