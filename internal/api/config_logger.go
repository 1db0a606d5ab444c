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
	"kbroker/internal/dynconfig"
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

func (loggerConfigResource) describe(s *Server, snap *meta.Snapshot, name string) ([]dynconfig.Described, error) {
	if err := s.checkLoggerResource(name); err != nil {
		return nil, err
	}
	var out []dynconfig.Described
	for _, n := range s.Loggers.Names() {
		level := s.Loggers.Level(n)
		out = append(out, dynconfig.Described{Entry: config.Entry{Name: n, Value: &level, Source: config.SourceBrokerLogger}})
	}
	return out, nil
}

func (loggerConfigResource) alter(ctx context.Context, s *Server, c *wire.Conn, name string, ops []dynconfig.Op, replace, validateOnly bool) error {
	if err := s.checkLoggerResource(name); err != nil {
		return err
	}
	if replace {
		return newError(kerr.InvalidRequest, "AlterConfigs does not support the BROKER_LOGGER resource type; use IncrementalAlterConfigs")
	}
	for _, op := range ops { // validate everything before changing anything
		if !s.Loggers.Has(op.Name) {
			return newError(kerr.InvalidConfig, fmt.Sprintf("Logger %s does not exist!", op.Name))
		}
		switch op.Kind {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.Value == nil {
				return newError(kerr.InvalidRequest, "Null value not supported for : "+op.Name)
			}
			if _, err := logging.ParseLevel(*op.Value); err != nil {
				return newError(kerr.InvalidConfig, err.Error())
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			if op.Name == logging.Root {
				return newError(kerr.InvalidRequest, "Removing the log level of the root logger is not allowed")
			}
		default:
			return newError(kerr.InvalidRequest, fmt.Sprintf("Operation %s is not allowed for the BROKER_LOGGER resource", op.Kind))
		}
	}
	if validateOnly {
		return nil
	}
	for _, op := range ops {
		old := s.Loggers.Level(op.Name)
		if op.Kind == kmsg.IncrementalAlterConfigOpSet {
			s.Loggers.SetLevel(op.Name, *op.Value)
		} else {
			s.Loggers.ResetLevel(op.Name)
		}
		s.Audit.Info("log level changed", "principal", c.Principal, "client", c.Remote.String(),
			"resource_type", "broker_logger", "resource", name, "key", op.Name, "old", old, "new", s.Loggers.Level(op.Name))
	}
	return nil
}
