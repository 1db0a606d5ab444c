package api

// The BROKER_LOGGER config resource (KIP-412): the receiving broker's
// loggers and their levels (internal/dynconfig, loggers.go). Only
// IncrementalAlterConfigs applies. The name must be this broker's id.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
)

type loggerConfigResource struct{}

func (s *Server) checkLoggerResource(name string) error {
	if name == "" {
		return newError(kerr.InvalidRequest, "Broker id must not be empty")
	}
	if name != itoa32(s.nodeID()) {
		return newError(kerr.InvalidRequest, fmt.Sprintf("Unexpected broker id, expected %d, but received %s", s.nodeID(), name))
	}
	return nil
}

func (loggerConfigResource) describe(s *Server, snap *meta.Snapshot, name string) ([]dynconfig.Described, error) {
	if err := s.checkLoggerResource(name); err != nil {
		return nil, err
	}
	return s.Configs.Loggers(), nil
}

func (loggerConfigResource) alter(ctx context.Context, s *Server, c *wire.Conn, name string, ops []dynconfig.Op, replace, validateOnly bool) error {
	if err := s.checkLoggerResource(name); err != nil {
		return err
	}
	if replace {
		return newError(kerr.InvalidRequest, "AlterConfigs does not support the BROKER_LOGGER resource type; use IncrementalAlterConfigs")
	}
	return s.Configs.AlterLoggers(name, ops, validateOnly, requester(c))
}
