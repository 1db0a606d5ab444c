package dynconfig

// The BROKER_LOGGER config resource (KIP-412): the broker's loggers, each a
// config whose value is its level (TRACE, DEBUG, INFO, WARN, ERROR,
// FATAL). Only SET and DELETE apply (DELETE returns a logger to the root
// level); levels are not stored, as in Kafka, so they are applied at once
// rather than through the store and an applier.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/logging"
)

// Loggers describes every logger with its level.
func (c *Configs) Loggers() []Described {
	var out []Described
	for _, n := range c.loggers.Names() {
		level := c.loggers.Level(n)
		out = append(out, Described{Entry: config.Entry{Name: n, Value: &level, Source: config.SourceBrokerLogger}})
	}
	return out
}

// AlterLoggers validates every op, then changes the levels and audits each
// change; validateOnly changes nothing. resource is the broker id the
// request named.
func (c *Configs) AlterLoggers(resource string, ops []Op, validateOnly bool, by Requester) error {
	for _, op := range ops { // validate everything before changing anything
		if !c.loggers.Has(op.Name) {
			return refuse(ErrInvalidConfig, "Logger %s does not exist!", op.Name)
		}
		switch op.Kind {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.Value == nil {
				return refuse(ErrInvalidRequest, "Null value not supported for : %s", op.Name)
			}
			if _, err := logging.ParseLevel(*op.Value); err != nil {
				return refuse(ErrInvalidConfig, "%s", err.Error())
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			if op.Name == logging.Root {
				return refuse(ErrInvalidRequest, "Removing the log level of the root logger is not allowed")
			}
		default:
			return refuse(ErrInvalidRequest, "Operation %s is not allowed for the BROKER_LOGGER resource", op.Kind)
		}
	}
	if validateOnly {
		return nil
	}
	for _, op := range ops {
		old := c.loggers.Level(op.Name)
		if op.Kind == kmsg.IncrementalAlterConfigOpSet {
			c.loggers.SetLevel(op.Name, *op.Value)
		} else {
			c.loggers.ResetLevel(op.Name)
		}
		c.audit.Info("log level changed", "principal", by.Principal, "client", by.Client,
			"resource_type", "broker_logger", "resource", resource, "key", op.Name, "old", old, "new", c.loggers.Level(op.Name))
	}
	return nil
}
