package api

// How handlers spell the names they check and report.

import (
	"strconv"

	"kbroker/internal/controller"
)

// validateTopicName is Kafka's topic naming rule, which the controller
// owns; handlers that look topics up by name apply it too.
var validateTopicName = controller.ValidateTopicName

// itoa32 is a broker id as a resource name.
func itoa32(n int32) string { return strconv.Itoa(int(n)) }
