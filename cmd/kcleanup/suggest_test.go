package main

import (
	"slices"
	"testing"
)

// "Did you mean" offers the few names a typo away, nearest first, never a different topic.
func TestNearestNames(t *testing.T) {
	names := []string{"action-state", "action-state.kcleanup", "actions", "orders", "action-stat", "action-statex", "action-stats"}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"action-sate", []string{"action-state", "action-stat", "action-statex"}}, // nearest first, then by name; at most three
		{"action-state", []string{"action-stat", "action-statex", "action-stats"}},
		{"orderz", []string{"orders"}},
		{"payments", nil},
		{"x", nil},
	} {
		if got := nearestNames(tc.name, names); !slices.Equal(got, tc.want) {
			t.Errorf("nearestNames(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
