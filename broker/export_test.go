package broker

import "time"

// SetPolicyPollInterval makes tests see a policy file change quickly; the
// returned func restores the interval.
func SetPolicyPollInterval(d time.Duration) func() {
	old := policyPollInterval
	policyPollInterval = d
	return func() { policyPollInterval = old }
}
