package clientconfig

import "sort"

// nearestKey returns the Kafka client key closest to key by edit distance, or "" when none is
// close enough to be the key the operator meant (more than a third of its length away).
func nearestKey(key string) string {
	keys := make([]string, 0, len(kafkaClientKeys))
	for k := range kafkaClientKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys) // ties go to the first in order, so the suggestion is stable
	best, bestD := "", len(key)/3+1
	for _, k := range keys {
		if d := editDistance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes (keys are ASCII).
func editDistance(a, b string) int {
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
