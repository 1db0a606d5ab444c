// Package buildinfo tells which kbroker this is: the module version and the
// commit it was built from, as the Go toolchain recorded them in the binary.
//
// The toolchain stamps the commit (vcs.revision, vcs.modified) only when it
// builds inside a git work tree with VCS stamping on: a release build is
// "go build ./cmd/kbroker" (or "go install kbroker/cmd/kbroker@vX.Y.Z",
// which stamps the module version instead) without -buildvcs=false in the
// command or in GOFLAGS. Builds without it report the revision as unknown.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// Unknown stands for a version or revision the build did not record.
const Unknown = "unknown"

// Info is what the binary knows about its own build.
type Info struct {
	Version   string // module version: "v1.2.3", "(devel)" for a work-tree build, or Unknown
	Revision  string // commit hash, or Unknown
	Modified  bool   // the work tree had uncommitted changes
	GoVersion string // the toolchain that built it
}

// Get reads the build info once; it is the same for the life of the process.
var Get = sync.OnceValue(read)

func read() Info {
	info := Info{Version: Unknown, Revision: Unknown, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info // a binary built without module support
	}
	if bi.Main.Version != "" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if s.Value != "" {
				info.Revision = s.Value
			}
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the one line "kbroker --version" prints, e.g.
// "kbroker (devel) commit 1a2b3c4d (modified) go1.26.8".
func (i Info) String() string {
	rev := "commit " + i.Revision
	if i.Revision == Unknown {
		rev = "commit unknown (built without VCS stamping)"
	} else if i.Modified {
		rev += " (modified)"
	}
	return "kbroker " + i.Version + " " + rev + " " + i.GoVersion
}

// RevisionLabel is the revision as a metric label: the hash, with
// "-modified" appended for a dirty work tree.
func (i Info) RevisionLabel() string {
	if i.Modified && i.Revision != Unknown {
		return i.Revision + "-modified"
	}
	return i.Revision
}
