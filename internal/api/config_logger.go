package api

// The BROKER_LOGGER config resource (KIP-412): the receiving broker's
// loggers, each a config whose value is its level (TRACE, DEBUG, INFO,
// WARN, ERROR, FATAL). Only IncrementalAlterConfigs SET and DELETE apply
// (DELETE returns a logger to the root level); levels are not persisted, as
// in Kafka. The name must be this broker's id.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/logging"
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

func (loggerConfigResource) describe(s *Server, snap *meta.Snapshot, name string) ([]configEntry, error) {
	if err := s.checkLoggerResource(name); err != nil {
		return nil, err
	}
	var out []configEntry
	for _, n := range s.Loggers.Names() {
		level := s.Loggers.Level(n)
		out = append(out, configEntry{Entry: config.Entry{Name: n, Value: &level, Source: config.SourceBrokerLogger}})
	}
	return out, nil
}

func (loggerConfigResource) alter(ctx context.Context, s *Server, c *wire.Conn, name string, ops []configOp, replace, validateOnly bool) error {
	if err := s.checkLoggerResource(name); err != nil {
		return err
	}
	if replace {
		return newError(kerr.InvalidRequest, "AlterConfigs does not support the BROKER_LOGGER resource type; use IncrementalAlterConfigs")
	}
	for _, op := range ops { // validate everything before changing anything
		if !s.Loggers.Has(op.name) {
			return newError(kerr.InvalidConfig, fmt.Sprintf("Logger %s does not exist!", op.name))
		}
		switch op.op {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.value == nil {
				return newError(kerr.InvalidRequest, "Null value not supported for : "+op.name)
			}
			if _, err := logging.ParseLevel(*op.value); err != nil {
				return newError(kerr.InvalidConfig, err.Error())
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			if op.name == logging.Root {
				return newError(kerr.InvalidRequest, "Removing the log level of the root logger is not allowed")
			}
		default:
			return newError(kerr.InvalidRequest, fmt.Sprintf("Operation %s is not allowed for the BROKER_LOGGER resource", op.op))
		}
	}
	if validateOnly {
		return nil
	}
	for _, op := range ops {
		old := s.Loggers.Level(op.name)
		if op.op == kmsg.IncrementalAlterConfigOpSet {
			s.Loggers.SetLevel(op.name, *op.value)
		} else {
			s.Loggers.ResetLevel(op.name)
		}
		s.Audit.Info("log level changed", "principal", c.Principal, "client", c.Remote.String(),
			"resource_type", "broker_logger", "resource", name, "key", op.name, "old", old, "new", s.Loggers.Level(op.name))
	}
	return nil
}
