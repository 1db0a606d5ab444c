package scale

import (
	"os"
	"testing"

	"kbroker/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }
