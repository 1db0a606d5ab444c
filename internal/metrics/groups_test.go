package metrics

import "testing"

func TestLagIsNeverNegative(t *testing.T) {
	for _, c := range []struct{ committed, hw, want int64 }{
		{committed: 4, hw: 10, want: 6},
		{committed: 10, hw: 10, want: 0},
		{committed: 12, hw: 10, want: 0}, // the log was recreated below the group's position
		{committed: -1, hw: 10, want: 10},
	} {
		if got := lag(c.committed, c.hw); got != c.want {
			t.Errorf("lag(%d, %d) = %d, want %d", c.committed, c.hw, got, c.want)
		}
	}
}
