package config

import "strings"

// ClosestBrokerKey is the broker config whose name is nearest to name by
// edit distance, for a "did you mean" hint on a key no catalog knows
// (listners → listeners). "" when nothing is near enough to be a likely
// typo: at most 2 edits, or a quarter of the name's length when longer.
func ClosestBrokerKey(name string) string {
	name = strings.TrimSpace(name)
	limit := max(2, len(name)/4)
	best, bestDist := "", limit+1
	for _, d := range Brokers.Defs() {
		if dist := editDistance(name, d.Name, bestDist); dist < bestDist {
			best, bestDist = d.Name, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, or any value
// at least bound once it is sure to reach bound (names whose lengths
// differ too much are not compared letter by letter).
func editDistance(a, b string, bound int) int {
	if d := len(a) - len(b); d >= bound || -d >= bound {
		return bound
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
