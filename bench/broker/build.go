package broker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Build compiles the Go package pkg (e.g. "./cmd/kbroker") of the module at
// root into dir and returns the binary's path. Brokers are built once per
// job, not per run, and with the default flags so that neither side gets
// race detection or debug builds the other lacks.
func Build(ctx context.Context, root, pkg, dir string) (string, error) {
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w", pkg, err)
	}
	return out, nil
}
