package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

func TestVersionLineSaysWhenTheCommitIsUnknown(t *testing.T) {
	unstamped := Info{Version: "(devel)", Revision: Unknown, GoVersion: runtime.Version()}
	if got := unstamped.String(); !strings.Contains(got, "commit unknown (built without VCS stamping)") {
		t.Errorf("unstamped build prints %q", got)
	}
	dirty := Info{Version: "v1.2.3", Revision: "1a2b3c", Modified: true, GoVersion: "go1.26.8"}
	if got, want := dirty.String(), "kbroker v1.2.3 commit 1a2b3c (modified) go1.26.8"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := dirty.RevisionLabel(); got != "1a2b3c-modified" {
		t.Errorf("RevisionLabel() = %q", got)
	}
	if got := Get(); got.GoVersion != runtime.Version() || got.Version == "" || got.Revision == "" {
		t.Errorf("Get() = %+v: every field is filled, the Go version is this toolchain's", got)
	}
}
